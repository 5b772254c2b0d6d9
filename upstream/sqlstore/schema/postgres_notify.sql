-- Change notifications for listingproxy on PostgreSQL 11+ (optional).
--
-- Installs a trigger on properties, agents, property_agents, property_media
-- and openhomes that sends, on the channel listingproxy_changes, one
-- notification per changed tenant and resource:
--
--   {"tenant": "<tenants.name>", "resource": "properties" | "agents"}
--
-- A TRUNCATE names no rows, so it sends {"tenant": "*", ...}: every tenant.
-- A listingproxy backend with notify: true LISTENs on the channel and purges
-- the named tenant's cached bodies at once instead of waiting for the TTL.
--
-- The row triggers run after each changed row but cost little: PostgreSQL
-- delivers identical payloads on one channel once per transaction, at
-- commit, so a transaction changing a thousand rows of one tenant sends one
-- notification per resource, and a rolled back one sends none. Child rows
-- (property_agents, property_media, openhomes) find their tenant through
-- properties. The function keeps the search_path it was installed with, so
-- it finds those tables whoever writes. Where the schema is views over
-- legacy tables, install the same triggers on the legacy tables, with the
-- tenant looked up their way.
--
-- Install with psql (idempotent; re-running replaces the triggers):
--
--   psql "$DSN" -f upstream/sqlstore/schema/postgres_notify.sql
--
-- or from Go with (*sqlstore.Store).InstallNotify. Remove with:
--
--   DROP FUNCTION listingproxy_notify_change() CASCADE;

CREATE OR REPLACE FUNCTION listingproxy_notify_change() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
	resource text := TG_ARGV[0];
	tenant_ids bigint[] := '{}';
	property_ids bigint[] := '{}';
	tenant_name text;
BEGIN
	IF TG_OP = 'TRUNCATE' THEN
		PERFORM pg_notify('listingproxy_changes',
			json_build_object('tenant', '*', 'resource', resource)::text);
		RETURN NULL;
	END IF;
	IF TG_TABLE_NAME IN ('properties', 'agents') THEN
		IF TG_OP IN ('UPDATE', 'DELETE') THEN
			tenant_ids := tenant_ids || OLD.tenant_id;
		END IF;
		IF TG_OP IN ('INSERT', 'UPDATE') THEN
			tenant_ids := tenant_ids || NEW.tenant_id;
		END IF;
	ELSE
		IF TG_OP IN ('UPDATE', 'DELETE') THEN
			property_ids := property_ids || OLD.property_id;
		END IF;
		IF TG_OP IN ('INSERT', 'UPDATE') THEN
			property_ids := property_ids || NEW.property_id;
		END IF;
		SELECT coalesce(array_agg(DISTINCT p.tenant_id), '{}') INTO tenant_ids
		FROM properties p WHERE p.id = ANY (property_ids);
	END IF;
	FOR tenant_name IN SELECT t.name FROM tenants t WHERE t.id = ANY (tenant_ids) LOOP
		PERFORM pg_notify('listingproxy_changes',
			json_build_object('tenant', tenant_name, 'resource', resource)::text);
	END LOOP;
	RETURN NULL;
END;
$$;

DROP TRIGGER IF EXISTS listingproxy_notify ON properties;
CREATE TRIGGER listingproxy_notify AFTER INSERT OR UPDATE OR DELETE ON properties
	FOR EACH ROW EXECUTE FUNCTION listingproxy_notify_change('properties');
DROP TRIGGER IF EXISTS listingproxy_notify_truncate ON properties;
CREATE TRIGGER listingproxy_notify_truncate AFTER TRUNCATE ON properties
	FOR EACH STATEMENT EXECUTE FUNCTION listingproxy_notify_change('properties');

DROP TRIGGER IF EXISTS listingproxy_notify ON agents;
CREATE TRIGGER listingproxy_notify AFTER INSERT OR UPDATE OR DELETE ON agents
	FOR EACH ROW EXECUTE FUNCTION listingproxy_notify_change('agents');
DROP TRIGGER IF EXISTS listingproxy_notify_truncate ON agents;
CREATE TRIGGER listingproxy_notify_truncate AFTER TRUNCATE ON agents
	FOR EACH STATEMENT EXECUTE FUNCTION listingproxy_notify_change('agents');

DROP TRIGGER IF EXISTS listingproxy_notify ON property_agents;
CREATE TRIGGER listingproxy_notify AFTER INSERT OR UPDATE OR DELETE ON property_agents
	FOR EACH ROW EXECUTE FUNCTION listingproxy_notify_change('properties');

DROP TRIGGER IF EXISTS listingproxy_notify ON property_media;
CREATE TRIGGER listingproxy_notify AFTER INSERT OR UPDATE OR DELETE ON property_media
	FOR EACH ROW EXECUTE FUNCTION listingproxy_notify_change('properties');

DROP TRIGGER IF EXISTS listingproxy_notify ON openhomes;
CREATE TRIGGER listingproxy_notify AFTER INSERT OR UPDATE OR DELETE ON openhomes
	FOR EACH ROW EXECUTE FUNCTION listingproxy_notify_change('properties');
