-- Append timeline events to a run's event stream, numbering them in order.
-- Entry ids are "<seq>-0", seq being the counter's next value, so a reader
-- asks for the events after its cursor with XRANGE "<cursor + 1>-0" +.
-- KEYS: events stream, seq counter
-- ARGV: approximate stream length cap, then one event JSON (without seq) per event
-- Returns the last seq (the counter's value when no event is given).
local seq = tonumber(redis.call('GET', KEYS[2]) or '0')
for i = 2, #ARGV do
  seq = redis.call('INCR', KEYS[2])
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], string.format('%d-0', seq), 'event', ARGV[i])
end
return seq
