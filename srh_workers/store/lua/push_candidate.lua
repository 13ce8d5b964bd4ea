-- KEYS: cands, cand_order, rank, best
-- ARGV: entry field, candidate JSON, canonical key, score ('' = pool unranked), rank member
-- Returns 1 when the entry is new, 0 when (node id, canonical key) was already pooled.
return push_candidate(KEYS[1], KEYS[2], KEYS[3], KEYS[4],
                      ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5])
