package main

// cleanerOptions are the log cleaner's broker settings, with Kafka's names
// and defaults; server.Config.ApplyProperties parses each (one parser for
// flags, env and server.properties).
var cleanerOptions = []option{
	cleanerOption("log-cleaner-enable", "log.cleaner.enable", "run the log cleaner, which compacts topics with cleanup.policy=compact", "true"),
	cleanerOption("log-cleaner-threads", "log.cleaner.threads", "logs cleaned at once", "1"),
	cleanerOption("log-cleaner-dedupe-buffer-size", "log.cleaner.dedupe.buffer.size", "bytes of the cleaners' key maps, split over the threads; a log with more keys than fit is cleaned in several passes", "134217728"),
	cleanerOption("log-cleaner-io-max-bytes-per-second", "log.cleaner.io.max.bytes.per.second", "bytes a second all cleaner threads read and write together", "1.7976931348623157E308"),
	cleanerOption("log-cleaner-backoff-ms", "log.cleaner.backoff.ms", "how long a cleaner thread sleeps when no log needs cleaning", "15000"),
	cleanerOption("log-cleaner-min-cleanable-ratio", "log.cleaner.min.cleanable.ratio", "min.cleanable.dirty.ratio of topics without it: clean a log once its dirty share is above it", "0.5"),
	cleanerOption("log-cleaner-delete-retention-ms", "log.cleaner.delete.retention.ms", "delete.retention.ms of topics without it: how long tombstones stay after a pass first cleaned past them", "86400000"),
	cleanerOption("log-cleaner-min-compaction-lag-ms", "log.cleaner.min.compaction.lag.ms", "min.compaction.lag.ms of topics without it: records newer than this are not compacted", "0"),
	cleanerOption("log-cleaner-max-compaction-lag-ms", "log.cleaner.max.compaction.lag.ms", "max.compaction.lag.ms of topics without it: a dirty record older than this forces a pass", "9223372036854775807"),
}

func cleanerOption(flag, key, usage, def string) option {
	return option{flag, []string{key}, usage, def, func(s *serveSettings, v string) error {
		_, err := s.broker.ApplyProperties(map[string]string{key: v})
		return err
	}}
}
