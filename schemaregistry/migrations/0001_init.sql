-- Schema registry tables. Ids and versions are assigned by ferry inside
-- transactions that hold the registry's advisory lock; schemaregistry_counters
-- keeps the highest id ever handed out so ids are never reused.
CREATE TABLE schemaregistry_schemas (
    id          integer PRIMARY KEY,
    fingerprint text    NOT NULL UNIQUE,
    schema_type text    NOT NULL,
    schema_text text    NOT NULL
);

CREATE TABLE schemaregistry_versions (
    subject    text        NOT NULL,
    version    integer     NOT NULL,
    schema_id  integer     NOT NULL REFERENCES schemaregistry_schemas (id),
    deleted    boolean     NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (subject, version)
);
CREATE INDEX schemaregistry_versions_schema_id ON schemaregistry_versions (schema_id);

CREATE TABLE schemaregistry_references (
    schema_id integer NOT NULL REFERENCES schemaregistry_schemas (id) ON DELETE CASCADE,
    position  integer NOT NULL,
    name      text    NOT NULL,
    subject   text    NOT NULL,
    version   integer NOT NULL,
    PRIMARY KEY (schema_id, position)
);
CREATE INDEX schemaregistry_references_target ON schemaregistry_references (subject, version);

CREATE TABLE schemaregistry_settings (
    kind    text NOT NULL,
    subject text NOT NULL, -- '' for the global setting
    value   text NOT NULL,
    PRIMARY KEY (kind, subject)
);

CREATE TABLE schemaregistry_counters (
    name  text   PRIMARY KEY,
    value bigint NOT NULL
);
INSERT INTO schemaregistry_counters (name, value) VALUES ('schema_id', 0);
