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
//	@Produce	application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Param		deleted			query	bool	false	"include soft-deleted subjects"
//	@Param		subjectPrefix	query	string	false	"only subjects starting with this"
//	@Success	200	{array}		string
//	@Failure	500	{object}	errorBody	"50001 store error, 50002 store timeout, 50003 store unavailable"
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router		/subjects [get]
func subjectsDoc() {}

// versionsDoc documents GET /subjects/{subject}/versions.
//
//	@Summary	List a subject's versions
//	@Tags		schemas
//	@Produce	application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Param		subject	path	string	true	"subject"
//	@Param		deleted	query	bool	false	"include soft-deleted versions"
//	@Success	200	{array}		int
//	@Failure	404	{object}	errorBody	"40401: subject not found"
//	@Failure	500	{object}	errorBody	"50001 store error, 50002 store timeout, 50003 store unavailable"
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router		/subjects/{subject}/versions [get]
func versionsDoc() {}

// registerDoc documents POST /subjects/{subject}/versions.
//
//	@Summary		Register a schema under a subject
//	@Description	Returns the schema's id: the same schema gets the same id under every subject. The subject's compatibility level is checked against its live versions; IMPORT mode takes the given id and version.
//	@Tags			schemas
//	@Accept			application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json,application/octet-stream
//	@Produce		application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Param			subject	path		string							true	"subject"
//	@Param			normalize	query	bool	false	"store the schema's canonical form"
//	@Param			body	body		schemaregistry.SchemaRequest	true	"schema, schemaType (AVRO, the default, or JSON), references; id and version in IMPORT mode"
//	@Success		200		{object}	schemaIDAnswer
//	@Failure	400	{object}	errorBody	"400: the body is not JSON"
//	@Failure		409		{object}	errorBody	"409: incompatible, naming each breaking change"
//	@Failure	413	{object}	errorBody	"41301: the body is over the request limit"
//	@Failure	415	{object}	errorBody	"41501: the content type is not one the registry takes"
//	@Failure		422		{object}	errorBody	"42201: invalid schema; 42205: not permitted in this mode"
//	@Failure		500		{object}	errorBody	"50001-50003: schema store error"
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router			/subjects/{subject}/versions [post]
func registerDoc() {}

// lookupDoc documents POST /subjects/{subject}.
//
//	@Summary	Find the version of a subject that holds a schema
//	@Tags		schemas
//	@Accept		application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json,application/octet-stream
//	@Produce	application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Param		subject	path		string							true	"subject"
//	@Param		deleted	query		bool							false	"look among soft-deleted versions too"
//	@Param		body	body		schemaregistry.SchemaRequest	true	"the schema"
//	@Success	200		{object}	schemaregistry.SchemaInfo
//	@Failure	400	{object}	errorBody	"400: the body is not JSON"
//	@Failure	404		{object}	errorBody	"40401: subject not found; 40403: schema not found"
//	@Failure	413	{object}	errorBody	"41301: the body is over the request limit"
//	@Failure	415	{object}	errorBody	"41501: the content type is not one the registry takes"
//	@Failure	422		{object}	errorBody	"42201: invalid schema"
//	@Failure	500	{object}	errorBody	"50001 store error, 50002 store timeout, 50003 store unavailable"
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router		/subjects/{subject} [post]
func lookupDoc() {}

// deleteSubjectDoc documents DELETE /subjects/{subject}.
//
//	@Summary	Delete a subject (soft, then ?permanent=true)
//	@Tags		schemas
//	@Produce	application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Param		subject		path	string	true	"subject"
//	@Param		permanent	query	bool	false	"remove a soft-deleted subject for good"
//	@Success	200	{array}		int	"the versions deleted"
//	@Failure	404	{object}	errorBody	"40401: not found; 40404: already soft-deleted; 40405: not soft-deleted first"
//	@Failure	422	{object}	errorBody	"42205: read-only; 42206: referenced by other schemas"
//	@Failure	500	{object}	errorBody	"50001 store error, 50002 store timeout, 50003 store unavailable"
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router		/subjects/{subject} [delete]
func deleteSubjectDoc() {}

// versionDoc documents GET /subjects/{subject}/versions/{version}.
//
//	@Summary	Get a version of a subject
//	@Tags		schemas
//	@Produce	application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Param		subject	path		string	true	"subject"
//	@Param		version	path		string	true	"a version number, latest or -1"
//	@Param		deleted	query		bool	false	"soft-deleted versions too"
//	@Success	200		{object}	schemaregistry.SchemaInfo
//	@Failure	404		{object}	errorBody	"40401: subject not found; 40402: version not found"
//	@Failure	422		{object}	errorBody	"42202: invalid version"
//	@Failure	500	{object}	errorBody	"50001 store error, 50002 store timeout, 50003 store unavailable"
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router		/subjects/{subject}/versions/{version} [get]
func versionDoc() {}

// deleteVersionDoc documents DELETE /subjects/{subject}/versions/{version}.
//
//	@Summary	Delete a version (soft, then ?permanent=true)
//	@Tags		schemas
//	@Produce	application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Param		subject		path	string	true	"subject"
//	@Param		version		path	string	true	"a version number, latest or -1"
//	@Param		permanent	query	bool	false	"remove a soft-deleted version for good"
//	@Success	200	{integer}	int	"the version deleted"
//	@Failure	404	{object}	errorBody	"40401, 40402; 40406: already soft-deleted; 40407: not soft-deleted first"
//	@Failure	422	{object}	errorBody	"42202: invalid version; 42205: read-only; 42206: referenced"
//	@Failure	500	{object}	errorBody	"50001 store error, 50002 store timeout, 50003 store unavailable"
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router		/subjects/{subject}/versions/{version} [delete]
func deleteVersionDoc() {}

// versionSchemaDoc documents GET /subjects/{subject}/versions/{version}/schema.
//
//	@Summary	Get a version's schema text alone
//	@Tags		schemas
//	@Produce	application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Param		subject	path		string	true	"subject"
//	@Param		version	path		string	true	"a version number, latest or -1"
//	@Success	200		{string}	string	"the schema"
//	@Failure	404		{object}	errorBody	"40401, 40402"
//	@Failure	422	{object}	errorBody	"42202: invalid version"
//	@Failure	500	{object}	errorBody	"50001 store error, 50002 store timeout, 50003 store unavailable"
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router		/subjects/{subject}/versions/{version}/schema [get]
func versionSchemaDoc() {}

// referencedByDoc documents GET /subjects/{subject}/versions/{version}/referencedby.
//
//	@Summary	Ids of the schemas that reference a version
//	@Tags		schemas
//	@Produce	application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Param		subject	path	string	true	"subject"
//	@Param		version	path	string	true	"a version number, latest or -1"
//	@Success	200	{array}		int
//	@Failure	404	{object}	errorBody	"40401, 40402"
//	@Failure	422	{object}	errorBody	"42202: invalid version"
//	@Failure	500	{object}	errorBody	"50001 store error, 50002 store timeout, 50003 store unavailable"
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router		/subjects/{subject}/versions/{version}/referencedby [get]
func referencedByDoc() {}

// diffDoc documents GET /subjects/{subject}/diff.
//
//	@Summary		Semantic changes between two versions of a subject
//	@Description	Each change (field added/removed/renamed, type promoted, default changed, enum symbol or union branch added/removed, decimal changed…) carries its verdict under every compatibility level. GET compares ?from with ?to (default latest); POST compares the body with ?from (default latest).
//	@Tags			schemas
//	@Produce		application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Param			subject	path		string	true	"subject"
//	@Param			from	query		string	true	"older version (number or latest)"
//	@Param			to		query		string	false	"newer version, default latest"
//	@Success		200		{object}	schemaregistry.DiffResult
//	@Failure		404		{object}	errorBody	"40401: subject not found; 40402: version not found"
//	@Failure		422		{object}	errorBody	"42202: from is missing or a version is invalid"
//	@Failure	500	{object}	errorBody	"50001 store error, 50002 store timeout, 50003 store unavailable"
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router			/subjects/{subject}/diff [get]
func diffDoc() {}

// diffCandidateDoc documents POST /subjects/{subject}/diff.
//
//	@Summary		Semantic changes between a version of a subject and a candidate schema
//	@Description	Each change (field added/removed/renamed, type promoted, default changed, enum symbol or union branch added/removed, decimal changed…) carries its verdict under every compatibility level. GET compares ?from with ?to (default latest); POST compares the body with ?from (default latest).
//	@Tags			schemas
//	@Accept			application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json,application/octet-stream
//	@Produce		application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Param			subject	path		string							true	"subject"
//	@Param			from	query		string							false	"the version to compare with (default latest)"
//	@Param			body	body		schemaregistry.SchemaRequest	true	"the candidate schema"
//	@Success		200		{object}	schemaregistry.DiffResult
//	@Failure	400	{object}	errorBody	"400: the body is not JSON"
//	@Failure		404		{object}	errorBody	"40401: subject not found; 40402: version not found"
//	@Failure	413	{object}	errorBody	"41301: the body is over the request limit"
//	@Failure	415	{object}	errorBody	"41501: the content type is not one the registry takes"
//	@Failure		422		{object}	errorBody	"42201: invalid candidate schema; 42202: invalid version; 422: a field of the wrong type"
//	@Failure	500	{object}	errorBody	"50001 store error, 50002 store timeout, 50003 store unavailable"
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router			/subjects/{subject}/diff [post]
func diffCandidateDoc() {}

// listSchemasDoc documents GET /schemas.
//
//	@Summary	List registered versions with their schemas
//	@Tags		schemas
//	@Produce	application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Param		subjectPrefix	query	string	false	"only subjects starting with this"
//	@Param		deleted			query	bool	false	"include soft-deleted versions"
//	@Param		latestOnly		query	bool	false	"each subject's latest version only"
//	@Param		offset			query	int		false	"skip this many"
//	@Param		limit			query	int		false	"at most this many (0: all)"
//	@Success	200	{array}		schemaregistry.SchemaInfo
//	@Failure	400	{object}	errorBody	"400: offset or limit is not a non-negative integer"
//	@Failure	500	{object}	errorBody	"50001 store error, 50002 store timeout, 50003 store unavailable"
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router		/schemas [get]
func listSchemasDoc() {}

// schemaTypesDoc documents GET /schemas/types.
//
//	@Summary	Schema types this registry serves
//	@Tags		schemas
//	@Produce	application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Success	200	{array}	string
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router		/schemas/types [get]
func schemaTypesDoc() {}

// schemaByIDDoc documents GET /schemas/ids/{id}.
//
//	@Summary	Get a schema by id
//	@Tags		schemas
//	@Produce	application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Param		id		path		int		true	"schema id"
//	@Param		subject	query		string	false	"accepted; one schema context, so it does not narrow the lookup"
//	@Success	200		{object}	schemaByIDAnswer
//	@Failure	404		{object}	errorBody	"40403: schema not found"
//	@Failure	500	{object}	errorBody	"50001 store error, 50002 store timeout, 50003 store unavailable"
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router		/schemas/ids/{id} [get]
func schemaByIDDoc() {}

// rawSchemaByIDDoc documents GET /schemas/ids/{id}/schema.
//
//	@Summary	Get a schema's text by id
//	@Tags		schemas
//	@Produce	application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Param		id	path		int		true	"schema id"
//	@Success	200	{string}	string	"the schema"
//	@Failure	404	{object}	errorBody	"40403: schema not found"
//	@Failure	500	{object}	errorBody	"50001 store error, 50002 store timeout, 50003 store unavailable"
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router		/schemas/ids/{id}/schema [get]
func rawSchemaByIDDoc() {}

// idVersionsDoc documents GET /schemas/ids/{id}/versions.
//
//	@Summary	Subject versions that use a schema id
//	@Tags		schemas
//	@Produce	application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Param		id		path	int		true	"schema id"
//	@Param		deleted	query	bool	false	"soft-deleted versions too"
//	@Success	200	{array}		subjectVersion
//	@Failure	404	{object}	errorBody	"40403: schema not found"
//	@Failure	500	{object}	errorBody	"50001 store error, 50002 store timeout, 50003 store unavailable"
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router		/schemas/ids/{id}/versions [get]
func idVersionsDoc() {}

// idSubjectsDoc documents GET /schemas/ids/{id}/subjects.
//
//	@Summary	Subjects that use a schema id
//	@Tags		schemas
//	@Produce	application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Param		id		path	int		true	"schema id"
//	@Param		deleted	query	bool	false	"soft-deleted versions too"
//	@Success	200	{array}		string
//	@Failure	404	{object}	errorBody	"40403: schema not found"
//	@Failure	500	{object}	errorBody	"50001 store error, 50002 store timeout, 50003 store unavailable"
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router		/schemas/ids/{id}/subjects [get]
func idSubjectsDoc() {}

// compatibilityDoc documents POST /compatibility/subjects/{subject}/versions[/{version}].
//
//	@Summary		Test a schema against a version, or against what the subject's level covers
//	@Tags			schemas
//	@Accept			application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json,application/octet-stream
//	@Produce		application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Param			subject	path		string							true	"subject"
//	@Param			version	path		string							true	"a version number, latest or -1"
//	@Param			verbose	query		bool							false	"list the breaking changes"
//	@Param			body	body		schemaregistry.SchemaRequest	true	"the schema"
//	@Success		200		{object}	compatibilityAnswer
//	@Failure	400	{object}	errorBody	"400: the body is not JSON"
//	@Failure		404		{object}	errorBody	"40401, 40402"
//	@Failure	413	{object}	errorBody	"41301: the body is over the request limit"
//	@Failure	415	{object}	errorBody	"41501: the content type is not one the registry takes"
//	@Failure		422		{object}	errorBody	"42201, 42202"
//	@Failure	500	{object}	errorBody	"50001 store error, 50002 store timeout, 50003 store unavailable"
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router			/compatibility/subjects/{subject}/versions/{version} [post]
func compatibilityDoc() {}

// compatibilityAllDoc documents POST /compatibility/subjects/{subject}/versions.
//
//	@Summary	Test a schema against the versions the subject's level covers
//	@Tags		schemas
//	@Accept		application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json,application/octet-stream
//	@Produce	application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Param		subject	path		string							true	"subject"
//	@Param		verbose	query		bool							false	"list the breaking changes"
//	@Param		body	body		schemaregistry.SchemaRequest	true	"the schema"
//	@Success	200		{object}	compatibilityAnswer
//	@Failure	400	{object}	errorBody	"400: the body is not JSON"
//	@Failure	413	{object}	errorBody	"41301: the body is over the request limit"
//	@Failure	415	{object}	errorBody	"41501: the content type is not one the registry takes"
//	@Failure	422		{object}	errorBody	"42201"
//	@Failure	500	{object}	errorBody	"50001 store error, 50002 store timeout, 50003 store unavailable"
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router		/compatibility/subjects/{subject}/versions [post]
func compatibilityAllDoc() {}

// configGetDoc documents GET /config and /config/{subject}.
//
//	@Summary		Compatibility level, global or of a subject
//	@Description	A subject without a level of its own answers 40408 unless defaultToGlobal=true.
//	@Tags			schemas
//	@Produce		application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Param			subject			path		string	true	"subject (for /config/{subject})"
//	@Param			defaultToGlobal	query		bool	false	"fall back to the global level"
//	@Success		200				{object}	compatibilityLevelAnswer
//	@Failure		404				{object}	errorBody	"40401: subject not found; 40408: the subject has no level of its own"
//	@Failure	500	{object}	errorBody	"50001 store error, 50002 store timeout, 50003 store unavailable"
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router			/config [get]
//	@Router			/config/{subject} [get]
func configGetDoc() {}

// configPutDoc documents PUT /config and /config/{subject}.
//
//	@Summary	Set the compatibility level, global or of a subject
//	@Tags		schemas
//	@Accept		application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json,application/octet-stream
//	@Produce	application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Param		subject	path		string				true	"subject (for /config/{subject})"
//	@Param		body	body		compatibilityUpdate	true	"the level: NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL or FULL_TRANSITIVE"
//	@Success	200		{object}	compatibilityUpdate
//	@Failure	400	{object}	errorBody	"400: the body is not JSON"
//	@Failure	413	{object}	errorBody	"41301: the body is over the request limit"
//	@Failure	415	{object}	errorBody	"41501: the content type is not one the registry takes"
//	@Failure	422		{object}	errorBody	"42203: invalid level; 422: a field of the wrong type"
//	@Failure	500	{object}	errorBody	"50001 store error, 50002 store timeout, 50003 store unavailable"
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router		/config [put]
//	@Router		/config/{subject} [put]
func configPutDoc() {}

// configDeleteDoc documents DELETE /config and /config/{subject}.
//
//	@Summary	Remove the compatibility level, global or of a subject; answers the level it had
//	@Tags		schemas
//	@Produce	application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Param		subject	path		string	true	"subject (for /config/{subject})"
//	@Success	200		{object}	compatibilityLevelAnswer
//	@Failure	404		{object}	errorBody	"40401: subject not found; 40408: the subject has no level of its own"
//	@Failure	500	{object}	errorBody	"50001 store error, 50002 store timeout, 50003 store unavailable"
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router		/config [delete]
//	@Router		/config/{subject} [delete]
func configDeleteDoc() {}

// modeGetDoc documents GET /mode and /mode/{subject}.
//
//	@Summary		Mode (READWRITE, READONLY, IMPORT), global or of a subject
//	@Description	A subject without a mode of its own answers 40409 unless defaultToGlobal=true.
//	@Tags			schemas
//	@Produce		application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Param			subject			path		string	true	"subject (for /mode/{subject})"
//	@Param			defaultToGlobal	query		bool	false	"fall back to the global mode"
//	@Success		200				{object}	modeBody
//	@Failure		404				{object}	errorBody	"40401: subject not found; 40409: the subject has no mode of its own"
//	@Failure	500	{object}	errorBody	"50001 store error, 50002 store timeout, 50003 store unavailable"
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router			/mode [get]
//	@Router			/mode/{subject} [get]
func modeGetDoc() {}

// modePutDoc documents PUT /mode and /mode/{subject}.
//
//	@Summary		Set the mode, global or of a subject
//	@Description	IMPORT where schemas exist needs force=true.
//	@Tags			schemas
//	@Accept			application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json,application/octet-stream
//	@Produce		application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Param			subject	path		string		true	"subject (for /mode/{subject})"
//	@Param			force	query		bool		false	"switch to IMPORT although schemas exist"
//	@Param			body	body		modeBody	true	"the mode: READWRITE, READONLY or IMPORT"
//	@Success		200		{object}	modeBody
//	@Failure	400	{object}	errorBody	"400: the body is not JSON"
//	@Failure	413	{object}	errorBody	"41301: the body is over the request limit"
//	@Failure	415	{object}	errorBody	"41501: the content type is not one the registry takes"
//	@Failure		422		{object}	errorBody	"42204: invalid mode; 42205: IMPORT needs force; 422: a field of the wrong type"
//	@Failure	500	{object}	errorBody	"50001 store error, 50002 store timeout, 50003 store unavailable"
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router			/mode [put]
//	@Router			/mode/{subject} [put]
func modePutDoc() {}

// modeDeleteDoc documents DELETE /mode/{subject}.
//
//	@Summary	Remove a subject's mode; answers the mode it had
//	@Tags		schemas
//	@Produce	application/vnd.schemaregistry.v1+json,application/vnd.schemaregistry+json,json
//	@Param		subject	path		string	true	"subject"
//	@Success	200		{object}	modeBody
//	@Failure	404		{object}	errorBody	"40401: subject not found; 40409: the subject has no mode of its own"
//	@Failure	500	{object}	errorBody	"50001 store error, 50002 store timeout, 50003 store unavailable"
//	@Failure	503	{object}	errorBody	"50301: no schema registry on this node"
//	@Router		/mode/{subject} [delete]
func modeDeleteDoc() {}
