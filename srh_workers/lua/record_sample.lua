-- One tool task's writes: record the node, pool its candidates, mark the sample done.
-- KEYS: nodes, node_detail, node_order, cands, cand_order, rank, best, done, keys
-- ARGV: node_id, node JSON, detail JSON, sample index K,
--       then 5 per candidate: field, JSON, canonical key, score, rank member
-- Returns {node new 0/1, size of the done set, one 0/1 per candidate}.
local replies = {record_node(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3]), 0}
for i = 5, #ARGV, 5 do
  replies[#replies + 1] = push_candidate(KEYS[4], KEYS[5], KEYS[6], KEYS[7],
                                         ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3],
                                         ARGV[i + 4])
end
redis.call('SADD', KEYS[8], ARGV[4])
redis.call('SADD', KEYS[9], KEYS[8])
replies[2] = redis.call('SCARD', KEYS[8])
return replies
