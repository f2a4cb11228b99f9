-- wrk script: POST /kafka/<topic> with 10 JSON records of ~100 bytes each.
-- The topic comes from the TOPIC environment variable (default topic1).
local topic = os.getenv("TOPIC") or "topic1"
local records = {}
for i = 1, 10 do
  records[i] = string.format(
    '{"key":"user-%d","value":{"id":%d,"event":"page_view","path":"/products/%05d","agent":"wrk-benchmark/4.2"}}',
    i, i, i * 7919 % 100000)
end
wrk.method = "POST"
wrk.path = "/kafka/" .. topic
wrk.body = '{"records":[' .. table.concat(records, ",") .. ']}'
wrk.headers["Content-Type"] = "application/json"
-- AUTH, when set, is the Authorization header (HTTP Basic against a
-- secured node).
local auth = os.getenv("AUTH")
if auth and auth ~= "" then wrk.headers["Authorization"] = auth end

local non200 = 0
response = function(status, headers, body)
  if status ~= 200 then non200 = non200 + 1 end
end

done = function(summary, latency, requests)
  io.write(string.format("RESULT requests=%d duration_us=%d errors=%d p50_us=%d p99_us=%d body_bytes=%d\n",
    summary.requests, summary.duration,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout,
    latency:percentile(50), latency:percentile(99), #wrk.body))
end
