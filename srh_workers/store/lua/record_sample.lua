-- One sample's writes in one step: its tool results (first write wins), its node, its
-- tool-call log lines, its candidates; mark the sample done, and when the K-set is
-- complete, claim the step's advance for this sample (SET NX, so one sample wins).
-- KEYS: nodes, node_detail, node_order, cands, cand_order, rank, best, done, keys,
--       results, toollog, advanced
-- ARGV: node_id, node JSON, detail JSON, sample index K, samples in the step (0: no claim),
--       results JSON ('' = none), number of log lines n, n log lines,
--       then 5 per candidate: field, JSON, canonical key, score, rank member
-- Returns {node new 0/1, size of the done set, claimed 0/1, one 0/1 per candidate}.
local K = ARGV[4]
if ARGV[6] ~= '' then
  redis.call('HSETNX', KEYS[10], K, ARGV[6])
  redis.call('SADD', KEYS[9], KEYS[10])
end
local replies = {record_node(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3]), 0, 0}
local lines = tonumber(ARGV[7])
if replies[1] == 1 then
  for i = 8, 7 + lines do
    redis.call('RPUSH', KEYS[11], ARGV[i])
  end
end
for i = 8 + lines, #ARGV, 5 do
  replies[#replies + 1] = push_candidate(KEYS[4], KEYS[5], KEYS[6], KEYS[7],
                                         ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3],
                                         ARGV[i + 4])
end
redis.call('SADD', KEYS[8], K)
redis.call('SADD', KEYS[9], KEYS[8])
replies[2] = redis.call('SCARD', KEYS[8])
local samples = tonumber(ARGV[5])
if samples > 0 and replies[2] >= samples then
  redis.call('SET', KEYS[12], K, 'NX')
  redis.call('SADD', KEYS[9], KEYS[12])
  if redis.call('GET', KEYS[12]) == K then
    replies[3] = 1
  end
end
return replies
