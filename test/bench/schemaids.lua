-- wrk script: GET /schemas/ids/<id>, cycling through the ids FIRST_ID ..
-- FIRST_ID+IDS-1 (environment; default 1 and 100), one per request.
local first = tonumber(os.getenv("FIRST_ID") or "1")
local count = tonumber(os.getenv("IDS") or "100")
local n = 0

request = function()
  n = n + 1
  return wrk.format("GET", "/schemas/ids/" .. (first + n % count))
end

local non200 = 0
response = function(status, headers, body)
  if status ~= 200 then non200 = non200 + 1 end
end

done = function(summary, latency, requests)
  io.write(string.format("RESULT requests=%d duration_us=%d errors=%d p50_us=%d p99_us=%d\n",
    summary.requests, summary.duration,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout,
    latency:percentile(50), latency:percentile(99)))
end
