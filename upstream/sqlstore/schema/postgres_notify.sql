-- Change notifications for listingproxy on PostgreSQL 11+ (optional).
--
-- Installs statement triggers on properties, agents, property_agents,
-- property_media and openhomes that send, on the channel
-- listingproxy_changes, one notification per statement, changed tenant
-- and resource, naming the changed entities:
--
--   {"tenant": "<tenants.name>", "resource": "properties" | "agents",
--    "table": "<the changed table>", "op": "INSERT" | "UPDATE" | "DELETE",
--    "properties": [<ids>], "agents": [<ids>]}
--
-- properties lists the properties whose documents changed (a property row,
-- its media, open homes or agent links), agents the agents whose documents
-- changed (an agent row, or a link to a property: an agent's document
-- lists its properties). A statement that changes more than 300 entities
-- of a tenant (a bulk import) names none: the notification then means the
-- whole tenant's resource, as does a TRUNCATE, which names no rows and
-- sends {"tenant": "*", ...} (every tenant). A listingproxy backend with
-- notify: true LISTENs on the channel and purges, at once instead of
-- waiting for the TTL, the cached bodies holding the named entities, or
-- the tenant's when none are named (docs/caching.md, change
-- notifications).
--
-- The triggers run once per statement, reading the statement's changed
-- rows from its transition tables, and PostgreSQL delivers identical
-- payloads on one channel once per transaction, at commit, so a rolled
-- back transaction sends none. Child rows find their tenant through
-- properties. The function keeps the search_path it was installed with, so
-- it finds those tables whoever writes. Where the schema is views over
-- legacy tables, install the same triggers on the legacy tables, with the
-- tenant looked up their way.
--
-- Install or upgrade with psql (idempotent; re-running replaces the
-- function and the triggers, those of earlier releases included):
--
--   psql "$DSN" -f upstream/sqlstore/schema/postgres_notify.sql
--
-- or from Go with (*sqlstore.Store).InstallNotify (a backend with
-- notify: true runs it at start). Remove with:
--
--   DROP FUNCTION listingproxy_notify_change() CASCADE;

CREATE OR REPLACE FUNCTION listingproxy_notify_change() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
	resource text := TG_ARGV[0];
	-- (tenant, property, agent) of every changed row, as parallel arrays.
	ts bigint[] := '{}';
	ps bigint[] := '{}';
	ags bigint[] := '{}';
	t2 bigint[];
	p2 bigint[];
	a2 bigint[];
	r record;
BEGIN
	IF TG_OP = 'TRUNCATE' THEN
		PERFORM pg_notify('listingproxy_changes',
			json_build_object('tenant', '*', 'resource', resource)::text);
		RETURN NULL;
	END IF;
	-- plpgsql plans a query when it first runs, so each branch names only
	-- the transition tables its event has.
	IF TG_OP IN ('UPDATE', 'DELETE') THEN
		IF TG_TABLE_NAME = 'properties' THEN
			SELECT array_agg(o.tenant_id), array_agg(o.id), array_agg(NULL::bigint) INTO t2, p2, a2 FROM old_rows o;
		ELSIF TG_TABLE_NAME = 'agents' THEN
			SELECT array_agg(o.tenant_id), array_agg(NULL::bigint), array_agg(o.id) INTO t2, p2, a2 FROM old_rows o;
		ELSIF TG_TABLE_NAME = 'property_agents' THEN
			SELECT array_agg(p.tenant_id), array_agg(o.property_id), array_agg(o.agent_id) INTO t2, p2, a2
				FROM old_rows o JOIN properties p ON p.id = o.property_id;
		ELSE
			SELECT array_agg(p.tenant_id), array_agg(o.property_id), array_agg(NULL::bigint) INTO t2, p2, a2
				FROM old_rows o JOIN properties p ON p.id = o.property_id;
		END IF;
		ts := ts || coalesce(t2, '{}'); ps := ps || coalesce(p2, '{}'); ags := ags || coalesce(a2, '{}');
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		IF TG_TABLE_NAME = 'properties' THEN
			SELECT array_agg(n.tenant_id), array_agg(n.id), array_agg(NULL::bigint) INTO t2, p2, a2 FROM new_rows n;
		ELSIF TG_TABLE_NAME = 'agents' THEN
			SELECT array_agg(n.tenant_id), array_agg(NULL::bigint), array_agg(n.id) INTO t2, p2, a2 FROM new_rows n;
		ELSIF TG_TABLE_NAME = 'property_agents' THEN
			SELECT array_agg(p.tenant_id), array_agg(n.property_id), array_agg(n.agent_id) INTO t2, p2, a2
				FROM new_rows n JOIN properties p ON p.id = n.property_id;
		ELSE
			SELECT array_agg(p.tenant_id), array_agg(n.property_id), array_agg(NULL::bigint) INTO t2, p2, a2
				FROM new_rows n JOIN properties p ON p.id = n.property_id;
		END IF;
		ts := ts || coalesce(t2, '{}'); ps := ps || coalesce(p2, '{}'); ags := ags || coalesce(a2, '{}');
	END IF;
	FOR r IN
		SELECT t.name,
			coalesce(array_agg(DISTINCT c.property_id) FILTER (WHERE c.property_id IS NOT NULL), '{}') AS properties,
			coalesce(array_agg(DISTINCT c.agent_id) FILTER (WHERE c.agent_id IS NOT NULL), '{}') AS agents
		FROM unnest(ts, ps, ags) AS c(tenant_id, property_id, agent_id)
		JOIN tenants t ON t.id = c.tenant_id
		GROUP BY t.name
	LOOP
		IF cardinality(r.properties) + cardinality(r.agents) > 300 THEN
			PERFORM pg_notify('listingproxy_changes',
				json_build_object('tenant', r.name, 'resource', resource, 'table', TG_TABLE_NAME, 'op', TG_OP)::text);
		ELSE
			PERFORM pg_notify('listingproxy_changes',
				json_build_object('tenant', r.name, 'resource', resource, 'table', TG_TABLE_NAME, 'op', TG_OP,
					'properties', r.properties, 'agents', r.agents)::text);
		END IF;
	END LOOP;
	RETURN NULL;
END;
$$;

-- The triggers of each table (and its resource), replacing earlier
-- releases' row triggers (listingproxy_notify).
DO $$
DECLARE
	t text;
	res text;
BEGIN
	FOR t, res IN VALUES ('properties', 'properties'), ('agents', 'agents'), ('property_agents', 'properties'),
		('property_media', 'properties'), ('openhomes', 'properties')
	LOOP
		EXECUTE format('DROP TRIGGER IF EXISTS listingproxy_notify ON %I', t);
		EXECUTE format('DROP TRIGGER IF EXISTS listingproxy_notify_insert ON %I', t);
		EXECUTE format('CREATE TRIGGER listingproxy_notify_insert AFTER INSERT ON %I REFERENCING NEW TABLE AS new_rows '
			'FOR EACH STATEMENT EXECUTE FUNCTION listingproxy_notify_change(%L)', t, res);
		EXECUTE format('DROP TRIGGER IF EXISTS listingproxy_notify_update ON %I', t);
		EXECUTE format('CREATE TRIGGER listingproxy_notify_update AFTER UPDATE ON %I REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows '
			'FOR EACH STATEMENT EXECUTE FUNCTION listingproxy_notify_change(%L)', t, res);
		EXECUTE format('DROP TRIGGER IF EXISTS listingproxy_notify_delete ON %I', t);
		EXECUTE format('CREATE TRIGGER listingproxy_notify_delete AFTER DELETE ON %I REFERENCING OLD TABLE AS old_rows '
			'FOR EACH STATEMENT EXECUTE FUNCTION listingproxy_notify_change(%L)', t, res);
		IF t IN ('properties', 'agents') THEN
			EXECUTE format('DROP TRIGGER IF EXISTS listingproxy_notify_truncate ON %I', t);
			EXECUTE format('CREATE TRIGGER listingproxy_notify_truncate AFTER TRUNCATE ON %I '
				'FOR EACH STATEMENT EXECUTE FUNCTION listingproxy_notify_change(%L)', t, res);
		END IF;
	END LOOP;
END;
$$;
