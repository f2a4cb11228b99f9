package api

import "github.com/ferry-mq/ferry/schemaregistry"

// OpenAPI annotations of the schema registry's routes (Confluent Schema
// Registry's paths and shapes). Several routes share a handler, so the
// annotations sit on these never-called functions, as in routes_doc.go.
// Every error is errorBody with Confluent's error_code; the HTTP status is
// its first three digits.

// schemaIDAnswer is POST /subjects/{subject}/versions' answer.
type schemaIDAnswer struct {
	ID int `json:"id"`
}

// compatibilityLevelAnswer is GET and DELETE /config's answer.
type compatibilityLevelAnswer struct {
	CompatibilityLevel string `json:"compatibilityLevel"`
}

// compatibilityUpdate is PUT /config's body and answer.
type compatibilityUpdate struct {
	Compatibility string `json:"compatibility"`
}

// modeBody is /mode's body and answer.
type modeBody struct {
	Mode string `json:"mode"`
}

// compatibilityAnswer documents POST /compatibility's answer; messages
// only with ?verbose=true (then always, [] when compatible).
type compatibilityAnswer struct {
	IsCompatible bool     `json:"is_compatible"`
	Messages     []string `json:"messages,omitempty"`
}

var _ = schemaregistry.SchemaInfo{}

// subjectsDoc documents GET /subjects.
//
//	@Summary	List subjects
//	@Tags		schemas
//	@Produce	json
//	@Param		deleted			query	bool	false	"include soft-deleted subjects"
//	@Param		subjectPrefix	query	string	false	"only subjects starting with this"
//	@Success	200	{array}		string
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router		/subjects [get]
func subjectsDoc() {}

// versionsDoc documents GET /subjects/{subject}/versions.
//
//	@Summary	List a subject's versions
//	@Tags		schemas
//	@Produce	json
//	@Param		subject	path	string	true	"subject"
//	@Param		deleted	query	bool	false	"include soft-deleted versions"
//	@Success	200	{array}		int
//	@Failure	404	{object}	errorBody	"40401: subject not found"
//	@Router		/subjects/{subject}/versions [get]
func versionsDoc() {}

// registerDoc documents POST /subjects/{subject}/versions.
//
//	@Summary		Register a schema under a subject
//	@Description	Returns the schema's id: the same schema gets the same id under every subject. The subject's compatibility level is checked against its live versions; IMPORT mode takes the given id and version.
//	@Tags			schemas
//	@Accept			json
//	@Produce		json
//	@Param			subject	path		string							true	"subject"
//	@Param			body	body		schemaregistry.SchemaRequest	true	"schema, schemaType (AVRO), references; id and version in IMPORT mode"
//	@Success		200		{object}	schemaIDAnswer
//	@Failure		409		{object}	errorBody	"409: incompatible, naming each breaking change"
//	@Failure		422		{object}	errorBody	"42201: invalid schema; 42205: not permitted in this mode"
//	@Failure		500		{object}	errorBody	"50001-50003: schema store error"
//	@Router			/subjects/{subject}/versions [post]
func registerDoc() {}

// lookupDoc documents POST /subjects/{subject}.
//
//	@Summary	Find the version of a subject that holds a schema
//	@Tags		schemas
//	@Accept		json
//	@Produce	json
//	@Param		subject	path		string							true	"subject"
//	@Param		deleted	query		bool							false	"look among soft-deleted versions too"
//	@Param		body	body		schemaregistry.SchemaRequest	true	"the schema"
//	@Success	200		{object}	schemaregistry.SchemaInfo
//	@Failure	404		{object}	errorBody	"40401: subject not found; 40403: schema not found"
//	@Failure	422		{object}	errorBody	"42201: invalid schema"
//	@Router		/subjects/{subject} [post]
func lookupDoc() {}

// deleteSubjectDoc documents DELETE /subjects/{subject}.
//
//	@Summary	Delete a subject (soft, then ?permanent=true)
//	@Tags		schemas
//	@Produce	json
//	@Param		subject		path	string	true	"subject"
//	@Param		permanent	query	bool	false	"remove a soft-deleted subject for good"
//	@Success	200	{array}		int	"the versions deleted"
//	@Failure	404	{object}	errorBody	"40401: not found; 40404: already soft-deleted; 40405: not soft-deleted first"
//	@Failure	422	{object}	errorBody	"42205: read-only; 42206: referenced by other schemas"
//	@Router		/subjects/{subject} [delete]
func deleteSubjectDoc() {}

// versionDoc documents GET /subjects/{subject}/versions/{version}.
//
//	@Summary	Get a version of a subject
//	@Tags		schemas
//	@Produce	json
//	@Param		subject	path		string	true	"subject"
//	@Param		version	path		string	true	"a version number, latest or -1"
//	@Param		deleted	query		bool	false	"soft-deleted versions too"
//	@Success	200		{object}	schemaregistry.SchemaInfo
//	@Failure	404		{object}	errorBody	"40401: subject not found; 40402: version not found"
//	@Failure	422		{object}	errorBody	"42202: invalid version"
//	@Router		/subjects/{subject}/versions/{version} [get]
func versionDoc() {}

// deleteVersionDoc documents DELETE /subjects/{subject}/versions/{version}.
//
//	@Summary	Delete a version (soft, then ?permanent=true)
//	@Tags		schemas
//	@Produce	json
//	@Param		subject		path	string	true	"subject"
//	@Param		version		path	string	true	"a version number, latest or -1"
//	@Param		permanent	query	bool	false	"remove a soft-deleted version for good"
//	@Success	200	{integer}	int	"the version deleted"
//	@Failure	404	{object}	errorBody	"40401, 40402; 40406: already soft-deleted; 40407: not soft-deleted first"
//	@Failure	422	{object}	errorBody	"42202: invalid version; 42205: read-only; 42206: referenced"
//	@Router		/subjects/{subject}/versions/{version} [delete]
func deleteVersionDoc() {}

// versionSchemaDoc documents GET /subjects/{subject}/versions/{version}/schema.
//
//	@Summary	Get a version's schema text alone
//	@Tags		schemas
//	@Produce	json
//	@Param		subject	path		string	true	"subject"
//	@Param		version	path		string	true	"a version number, latest or -1"
//	@Success	200		{string}	string	"the schema"
//	@Failure	404		{object}	errorBody	"40401, 40402"
//	@Router		/subjects/{subject}/versions/{version}/schema [get]
func versionSchemaDoc() {}

// referencedByDoc documents GET /subjects/{subject}/versions/{version}/referencedby.
//
//	@Summary	Ids of the schemas that reference a version
//	@Tags		schemas
//	@Produce	json
//	@Param		subject	path	string	true	"subject"
//	@Param		version	path	string	true	"a version number, latest or -1"
//	@Success	200	{array}		int
//	@Failure	404	{object}	errorBody	"40401, 40402"
//	@Router		/subjects/{subject}/versions/{version}/referencedby [get]
func referencedByDoc() {}

// diffDoc documents GET and POST /subjects/{subject}/diff.
//
//	@Summary		Semantic changes between two versions, or a candidate and a version
//	@Description	Each change (field added/removed/renamed, type promoted, default changed, enum symbol or union branch added/removed, decimal changed…) carries its verdict under every compatibility level. GET compares ?from with ?to (default latest); POST compares the body with ?from (default latest).
//	@Tags			schemas
//	@Accept			json
//	@Produce		json
//	@Param			subject	path		string							true	"subject"
//	@Param			from	query		string							false	"older version (required for GET)"
//	@Param			to		query		string							false	"newer version, default latest (GET)"
//	@Param			body	body		schemaregistry.SchemaRequest	false	"candidate schema (POST)"
//	@Success		200		{object}	schemaregistry.DiffResult
//	@Failure		404		{object}	errorBody	"40401, 40402"
//	@Failure		422		{object}	errorBody	"42201, 42202"
//	@Router			/subjects/{subject}/diff [get]
//	@Router			/subjects/{subject}/diff [post]
func diffDoc() {}

// schemaTypesDoc documents GET /schemas/types.
//
//	@Summary	Schema types this registry serves
//	@Tags		schemas
//	@Produce	json
//	@Success	200	{array}	string
//	@Router		/schemas/types [get]
func schemaTypesDoc() {}

// schemaByIDDoc documents GET /schemas/ids/{id}.
//
//	@Summary	Get a schema by id
//	@Tags		schemas
//	@Produce	json
//	@Param		id		path		int		true	"schema id"
//	@Param		subject	query		string	false	"accepted; one schema context, so it does not narrow the lookup"
//	@Success	200		{object}	schemaByIDAnswer
//	@Failure	404		{object}	errorBody	"40403: schema not found"
//	@Router		/schemas/ids/{id} [get]
func schemaByIDDoc() {}

// rawSchemaByIDDoc documents GET /schemas/ids/{id}/schema.
//
//	@Summary	Get a schema's text by id
//	@Tags		schemas
//	@Produce	json
//	@Param		id	path		int		true	"schema id"
//	@Success	200	{string}	string	"the schema"
//	@Failure	404	{object}	errorBody	"40403: schema not found"
//	@Router		/schemas/ids/{id}/schema [get]
func rawSchemaByIDDoc() {}

// idVersionsDoc documents GET /schemas/ids/{id}/versions.
//
//	@Summary	Subject versions that use a schema id
//	@Tags		schemas
//	@Produce	json
//	@Param		id		path	int		true	"schema id"
//	@Param		deleted	query	bool	false	"soft-deleted versions too"
//	@Success	200	{array}		subjectVersion
//	@Failure	404	{object}	errorBody	"40403: schema not found"
//	@Router		/schemas/ids/{id}/versions [get]
func idVersionsDoc() {}

// idSubjectsDoc documents GET /schemas/ids/{id}/subjects.
//
//	@Summary	Subjects that use a schema id
//	@Tags		schemas
//	@Produce	json
//	@Param		id		path	int		true	"schema id"
//	@Param		deleted	query	bool	false	"soft-deleted versions too"
//	@Success	200	{array}		string
//	@Failure	404	{object}	errorBody	"40403: schema not found"
//	@Router		/schemas/ids/{id}/subjects [get]
func idSubjectsDoc() {}

// compatibilityDoc documents POST /compatibility/subjects/{subject}/versions[/{version}].
//
//	@Summary		Test a schema against a version, or against what the subject's level covers
//	@Tags			schemas
//	@Accept			json
//	@Produce		json
//	@Param			subject	path		string							true	"subject"
//	@Param			version	path		string							true	"a version number, latest or -1"
//	@Param			verbose	query		bool							false	"list the breaking changes"
//	@Param			body	body		schemaregistry.SchemaRequest	true	"the schema"
//	@Success		200		{object}	compatibilityAnswer
//	@Failure		404		{object}	errorBody	"40401, 40402"
//	@Failure		422		{object}	errorBody	"42201, 42202"
//	@Router			/compatibility/subjects/{subject}/versions/{version} [post]
func compatibilityDoc() {}

// compatibilityAllDoc documents POST /compatibility/subjects/{subject}/versions.
//
//	@Summary	Test a schema against the versions the subject's level covers
//	@Tags		schemas
//	@Accept		json
//	@Produce	json
//	@Param		subject	path		string							true	"subject"
//	@Param		verbose	query		bool							false	"list the breaking changes"
//	@Param		body	body		schemaregistry.SchemaRequest	true	"the schema"
//	@Success	200		{object}	compatibilityAnswer
//	@Failure	422		{object}	errorBody	"42201"
//	@Router		/compatibility/subjects/{subject}/versions [post]
func compatibilityAllDoc() {}

// configDoc documents /config and /config/{subject}.
//
//	@Summary		Compatibility level, global or of a subject
//	@Description	GET answers the level (a subject without its own is 40408 unless ?defaultToGlobal=true); PUT sets it ({"compatibility": "BACKWARD"}, 42203 when invalid); DELETE removes it and answers the level it had.
//	@Tags			schemas
//	@Accept			json
//	@Produce		json
//	@Param			subject			path		string				true	"subject (for /config/{subject})"
//	@Param			defaultToGlobal	query		bool				false	"GET: fall back to the global level"
//	@Param			body			body		compatibilityUpdate	false	"PUT: the level"
//	@Success		200				{object}	compatibilityLevelAnswer	"GET and DELETE; PUT answers compatibilityUpdate"
//	@Failure		404				{object}	errorBody					"40401, 40408"
//	@Failure		422				{object}	errorBody					"42203: invalid level"
//	@Router			/config [get]
//	@Router			/config [put]
//	@Router			/config [delete]
//	@Router			/config/{subject} [get]
//	@Router			/config/{subject} [put]
//	@Router			/config/{subject} [delete]
func configDoc() {}

// modeDoc documents /mode and /mode/{subject}.
//
//	@Summary		Mode (READWRITE, READONLY, IMPORT), global or of a subject
//	@Description	GET answers the mode (a subject without its own is 40409 unless ?defaultToGlobal=true); PUT sets it (IMPORT where schemas exist needs ?force=true, else 42205; 42204 when invalid); DELETE /mode/{subject} removes it and answers the mode it had.
//	@Tags			schemas
//	@Accept			json
//	@Produce		json
//	@Param			subject			path		string		true	"subject (for /mode/{subject})"
//	@Param			defaultToGlobal	query		bool		false	"GET: fall back to the global mode"
//	@Param			force			query		bool		false	"PUT: switch to IMPORT although schemas exist"
//	@Param			body			body		modeBody	false	"PUT: the mode"
//	@Success		200				{object}	modeBody
//	@Failure		404				{object}	errorBody	"40401, 40409"
//	@Failure		422				{object}	errorBody	"42204: invalid mode; 42205: IMPORT needs force"
//	@Router			/mode [get]
//	@Router			/mode [put]
//	@Router			/mode/{subject} [get]
//	@Router			/mode/{subject} [put]
//	@Router			/mode/{subject} [delete]
func modeDoc() {}
