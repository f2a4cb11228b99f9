-- wrk script: GET /schemas/ids/<id>, cycling through the ids listed in the
-- environment variable ID_LIST (comma-separated), one per request; a
-- non-200 answer counts as an error.
local ids = {}
for id in string.gmatch(os.getenv("ID_LIST") or "1", "[^,]+") do
  ids[#ids + 1] = id
end
local n = 0

request = function()
  n = n + 1
  return wrk.format("GET", "/schemas/ids/" .. ids[n % #ids + 1])
end

done = function(summary, latency, requests)
  io.write(string.format("RESULT requests=%d duration_us=%d errors=%d p50_us=%d p99_us=%d\n",
    summary.requests, summary.duration,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout,
    latency:percentile(50), latency:percentile(99)))
end
