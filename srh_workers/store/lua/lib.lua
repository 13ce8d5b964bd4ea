-- Shared functions, prepended to the scripts that write the pool (see srh_workers.store).
-- Scores travel as the text Python wrote (repr of a double) and are never tonumber'd:
-- Lua would print them back with 14 significant digits and break exact ties.

-- Record a node once by id: its summary, its detail, and its place in the order.
local function record_node(nodes, node_detail, node_order, node_id, record, detail)
  if redis.call('HSETNX', nodes, node_id, record) == 0 then
    return 0
  end
  redis.call('HSET', node_detail, node_id, detail)
  redis.call('RPUSH', node_order, node_id)
  return 1
end

-- Pool an entry once; rank keeps only the best-ranked entry of each canonical key.
-- The zset itself decides which entry is better (score, then member bytes), so Lua
-- never compares scores or strings. An empty score pools without ranking.
local function push_candidate(cands, cand_order, rank, best, field, record, key, score, member)
  if redis.call('HSETNX', cands, field, record) == 0 then
    return 0
  end
  redis.call('RPUSH', cand_order, field)
  if score == '' then
    return 1
  end
  redis.call('ZADD', rank, score, member)
  local held = redis.call('HGET', best, key)
  if not held then
    redis.call('HSET', best, key, member)
  elseif redis.call('ZRANK', rank, member) < redis.call('ZRANK', rank, held) then
    redis.call('ZREM', rank, held)
    redis.call('HSET', best, key, member)
  else
    redis.call('ZREM', rank, member)
  end
  return 1
end
