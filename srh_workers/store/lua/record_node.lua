-- KEYS: nodes, node_detail, node_order
-- ARGV: node_id, node JSON without detail, detail JSON
-- Returns 1 when the node is new, 0 when its id was already recorded.
return record_node(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3])
