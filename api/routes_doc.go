package api

// OpenAPI annotations of routes whose handlers are closures or live in
// another package (swag reads annotations on functions only). These
// functions are never called; openapi's route test fails when a served
// route has no annotation here or on its handler.

// uiRedirectDoc documents GET /ui, Handler's redirect to /ui/.
//
//	@Summary	Redirect to the admin page
//	@Tags		ui
//	@Success	301	"Location: /ui/"
//	@Router		/ui [get]
func uiRedirectDoc() {}

// uiDoc documents GET /ui/*, the admin page (web.Handler).
//
//	@Summary		The admin page and its embedded assets
//	@Description	A path that names no asset answers the page itself (index.html), so the page's own links work on reload. Methods other than GET and HEAD answer 405.
//	@Tags			ui
//	@Produce		html,text/css,text/javascript
//	@Param			path	path		string	true	"a page or asset path under /ui/"
//	@Success		200		{string}	string	"the page or asset"
//	@Failure		405		{string}	string	"not GET or HEAD"
//	@Router			/ui/{path} [get]
func uiDoc() {}

// metricsDoc documents GET /metrics, served by the Prometheus handler of
// Config.Metrics when it is set.
//
//	@Summary		Prometheus metrics (when the node runs with metrics on)
//	@Description	The Prometheus text exposition format (or OpenMetrics when asked for with Accept): request, produce, fetch, storage, replication, group-lag and schema-registry series.
//	@Tags			cluster
//	@Produce		plain
//	@Success		200	{string}	string	"metrics in the Prometheus text format"
//	@Router			/metrics [get]
func metricsDoc() {}
