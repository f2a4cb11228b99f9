-- Registrations without one registry-wide lock. 0001 assigned ids from one
-- counter row under one advisory lock held until commit, so every
-- registration on every node waited for the previous one's commit flush.
-- Now:
--   * ids come from a SEQUENCE: unique across sessions and nodes by
--     construction, never handed out twice even when a transaction rolls
--     back (ids may skip; they never repeat);
--   * a subject's versions are assigned under a transaction-scoped advisory
--     lock on that subject (two-key form: class 1717924466 'ferr', key
--     hashtext(subject); a hash collision only serializes two subjects);
--   * every write also takes the registry lock of 0001 (key
--     112585897834754) SHARED; a permanent delete takes it exclusively, so
--     it never removes a schema a concurrent registration is reusing, and a
--     node still running 0001's code (exclusive lock) excludes the new ones;
--   * the primary keys (schemas.id, (subject, version)) and the unique
--     fingerprint remain the last word: a collision fails, never duplicates.
-- One function call is one registration: one round trip, one transaction.
-- It does not NOTIFY: a transaction that does holds the database-wide
-- notification lock through its commit, serializing every registration;
-- the caller notifies in a transaction of its own right after.

CREATE SEQUENCE schemaregistry_schema_ids AS integer;

-- Continue above every id handed out so far: the counter (ids of purged
-- schemas are never reused) and, for safety, every id stored.
SELECT setval('schemaregistry_schema_ids', greatest(v, 1), v > 0)
FROM (SELECT greatest(
        coalesce((SELECT value FROM schemaregistry_counters WHERE name = 'schema_id'), 0),
        coalesce((SELECT max(id) FROM schemaregistry_schemas), 0)) AS v) AS highest;

-- Returns one row: o_outcome 'ok' (o_version, o_id set; o_created when
-- this call stored the schema), 'conflict' (the
-- subject's highest version is not p_expect_latest), 'id_in_use' or
-- 'version_in_use' (imports). p_version / p_id are 0 unless imported.
-- With p_assumed the caller decided from its caches: 'conflict' too when
-- the settings (subject's and global level and mode, '' for none) are no
-- longer the given ones or the subject already holds the schema live.
CREATE FUNCTION schemaregistry_add_version(
    p_subject text, p_expect_latest integer, p_version integer, p_id integer,
    p_fingerprint text, p_type text, p_text text,
    p_ref_names text[], p_ref_subjects text[], p_ref_versions integer[],
    p_assumed boolean, p_subject_level text, p_global_level text, p_subject_mode text, p_global_mode text)
RETURNS TABLE (o_outcome text, o_version integer, o_id integer, o_created boolean)
LANGUAGE plpgsql AS $$
DECLARE
    l_latest  integer;
    l_version integer := p_version;
    l_id      integer;
    l_created boolean := false;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(112585897834754);
    PERFORM pg_advisory_xact_lock(1717924466, hashtext(p_subject));
    SELECT coalesce(max(v.version), 0) INTO l_latest
        FROM schemaregistry_versions v WHERE v.subject = p_subject;
    IF l_latest <> p_expect_latest OR (p_assumed AND (
            coalesce((SELECT st.value FROM schemaregistry_settings st WHERE st.kind = 'compatibility' AND st.subject = p_subject), '') <> p_subject_level
            OR coalesce((SELECT st.value FROM schemaregistry_settings st WHERE st.kind = 'compatibility' AND st.subject = ''), '') <> p_global_level
            OR coalesce((SELECT st.value FROM schemaregistry_settings st WHERE st.kind = 'mode' AND st.subject = p_subject), '') <> p_subject_mode
            OR coalesce((SELECT st.value FROM schemaregistry_settings st WHERE st.kind = 'mode' AND st.subject = ''), '') <> p_global_mode
            OR EXISTS (SELECT 1 FROM schemaregistry_versions v JOIN schemaregistry_schemas s ON s.id = v.schema_id
                WHERE v.subject = p_subject AND NOT v.deleted AND s.fingerprint = p_fingerprint))) THEN
        RETURN QUERY SELECT 'conflict'::text, 0, 0, false;
        RETURN;
    END IF;
    IF l_version = 0 THEN
        l_version := l_latest + 1;
    ELSIF l_version <= l_latest AND EXISTS (SELECT 1 FROM schemaregistry_versions v
            WHERE v.subject = p_subject AND v.version = l_version) THEN
        RETURN QUERY SELECT 'version_in_use'::text, 0, 0, false;
        RETURN;
    END IF;
    LOOP
        SELECT s.id INTO l_id FROM schemaregistry_schemas s WHERE s.fingerprint = p_fingerprint;
        IF FOUND THEN
            IF p_id <> 0 AND p_id <> l_id THEN
                RETURN QUERY SELECT 'id_in_use'::text, 0, 0, false;
                RETURN;
            END IF;
            EXIT;
        END IF;
        IF p_id <> 0 THEN
            l_id := p_id;
        ELSE
            l_id := nextval('schemaregistry_schema_ids');
        END IF;
        -- A concurrent registration of the same schema under another
        -- subject makes this a no-op once it commits; the next turn of the
        -- loop (a new snapshot) finds its id. An id taken by an import
        -- makes it a no-op too: the next turn draws another.
        INSERT INTO schemaregistry_schemas (id, fingerprint, schema_type, schema_text)
            VALUES (l_id, p_fingerprint, p_type, p_text) ON CONFLICT DO NOTHING;
        IF FOUND THEN
            l_created := true;
            INSERT INTO schemaregistry_references (schema_id, position, name, subject, version)
                SELECT l_id, r.ord - 1, r.name, r.subject, r.version
                FROM unnest(p_ref_names, p_ref_subjects, p_ref_versions) WITH ORDINALITY AS r(name, subject, version, ord);
            IF p_id <> 0 THEN
                PERFORM setval('schemaregistry_schema_ids', p_id)
                    WHERE p_id > (SELECT last_value FROM schemaregistry_schema_ids);
            END IF;
            EXIT;
        END IF;
        IF p_id <> 0 AND NOT EXISTS (SELECT 1 FROM schemaregistry_schemas s WHERE s.fingerprint = p_fingerprint) THEN
            RETURN QUERY SELECT 'id_in_use'::text, 0, 0, false;
            RETURN;
        END IF;
    END LOOP;
    INSERT INTO schemaregistry_versions (subject, version, schema_id) VALUES (p_subject, l_version, l_id);
    RETURN QUERY SELECT 'ok'::text, l_version, l_id, l_created;
END
$$;
