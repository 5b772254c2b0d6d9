-- The legacy schema (design.md §7) on PostgreSQL 12+.
--
-- Timestamps are timestamptz, approved is date. Text columns are COLLATE "C"
-- so ORDER BY and their btree indexes compare byte-wise, as on SQLite and
-- MySQL (utf8mb4_bin). Case-insensitive filters use lower(col) = $n, backed
-- by expression indexes. Nullable order columns are indexed NULLS FIRST, as
-- the store orders them. Filter and order indexes end with id, the store's
-- tie-breaker: an equality filter, or an order column, then reads rows in
-- exactly the ORDER BY's order and a LIMIT stops early, with no sort (InnoDB
-- appends the primary key to secondary indexes by itself, so mysql.sql does
-- not spell it out). The geo index holds price_from and id too: the
-- bounding-box scan is index-only, in id order and in price order (the
-- candidates are sorted from the index alone).
--
-- Every statement is idempotent; statements are separated by a semicolon at
-- the end of a line.

CREATE TABLE IF NOT EXISTS tenants (
	id   bigint PRIMARY KEY,
	name text COLLATE "C" NOT NULL UNIQUE
);

CREATE TABLE IF NOT EXISTS agents (
	id                bigint PRIMARY KEY,
	tenant_id         bigint NOT NULL REFERENCES tenants (id),
	country           text COLLATE "C" NOT NULL,
	name              text COLLATE "C" NOT NULL,
	username          text COLLATE "C" NOT NULL,
	phone             text COLLATE "C" NOT NULL DEFAULT '',
	after_hours_phone text COLLATE "C" NOT NULL DEFAULT '',
	mobile_phone      text COLLATE "C" NOT NULL DEFAULT '',
	email             text COLLATE "C" NOT NULL DEFAULT '',
	description       text COLLATE "C" NOT NULL DEFAULT '',
	photo_url         text COLLATE "C" NOT NULL DEFAULT '',
	website_url       text COLLATE "C" NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX IF NOT EXISTS agents_tenant_username ON agents (tenant_id, username);
CREATE INDEX IF NOT EXISTS agents_tc_id ON agents (tenant_id, country, id);
CREATE INDEX IF NOT EXISTS agents_tc_name ON agents (tenant_id, country, name);
CREATE INDEX IF NOT EXISTS agents_tc_username ON agents (tenant_id, country, username);
CREATE INDEX IF NOT EXISTS agents_tc_lower_username ON agents (tenant_id, country, lower(username));

CREATE TABLE IF NOT EXISTS properties (
	id              bigint PRIMARY KEY,
	tenant_id       bigint NOT NULL REFERENCES tenants (id),
	country         text COLLATE "C" NOT NULL,
	agency_id       text COLLATE "C" NOT NULL,
	last_updated    timestamptz NOT NULL,
	approved        date,
	street_number   text COLLATE "C" NOT NULL DEFAULT '',
	street_name     text COLLATE "C" NOT NULL DEFAULT '',
	address_display boolean NOT NULL DEFAULT true,
	status          text COLLATE "C" NOT NULL,
	latitude        double precision NOT NULL,
	longitude       double precision NOT NULL,
	price_text      text COLLATE "C" NOT NULL DEFAULT '',
	price_from      double precision,
	price_to        double precision,
	price_type      text COLLATE "C" NOT NULL DEFAULT '',
	category        text COLLATE "C" NOT NULL,
	property_type   text COLLATE "C" NOT NULL DEFAULT '',
	suburb          text COLLATE "C" NOT NULL DEFAULT '',
	area            text COLLATE "C" NOT NULL DEFAULT '',
	region          text COLLATE "C" NOT NULL DEFAULT '',
	bedrooms        integer,
	bathrooms       integer,
	floor_size      double precision,
	lot_size        double precision,
	built_in        text COLLATE "C" NOT NULL DEFAULT '',
	description     text COLLATE "C" NOT NULL DEFAULT '',
	featured        boolean NOT NULL DEFAULT false
);
CREATE UNIQUE INDEX IF NOT EXISTS properties_tenant_agency_id ON properties (tenant_id, agency_id);
-- The indexes of the order fields carry latitude and longitude (INCLUDE,
-- suffix _ll): a geo search whose box is large walks the scope in the
-- order's index and tests the box on each entry (geoWalkQuery), index-only.
CREATE INDEX IF NOT EXISTS properties_tc_id_ll ON properties (tenant_id, country, id) INCLUDE (latitude, longitude);
CREATE INDEX IF NOT EXISTS properties_tc_agency_id_ll ON properties (tenant_id, country, agency_id, id) INCLUDE (latitude, longitude);
CREATE INDEX IF NOT EXISTS properties_tc_status_id_ll ON properties (tenant_id, country, status, id) INCLUDE (latitude, longitude);
CREATE INDEX IF NOT EXISTS properties_tc_category_id_ll ON properties (tenant_id, country, category, id) INCLUDE (latitude, longitude);
CREATE INDEX IF NOT EXISTS properties_tc_property_type_id_ll ON properties (tenant_id, country, property_type, id) INCLUDE (latitude, longitude);
CREATE INDEX IF NOT EXISTS properties_tc_lower_property_type ON properties (tenant_id, country, lower(property_type));
CREATE INDEX IF NOT EXISTS properties_tc_lower_price_type ON properties (tenant_id, country, lower(price_type));
CREATE INDEX IF NOT EXISTS properties_tc_lower_street_name ON properties (tenant_id, country, lower(street_name));
CREATE INDEX IF NOT EXISTS properties_tc_geo_price_id ON properties (tenant_id, country, latitude, longitude, price_from, id);
CREATE INDEX IF NOT EXISTS properties_tc_approved_id_ll ON properties (tenant_id, country, approved NULLS FIRST, id) INCLUDE (latitude, longitude);
CREATE INDEX IF NOT EXISTS properties_tc_last_updated_id_ll ON properties (tenant_id, country, last_updated, id) INCLUDE (latitude, longitude);
CREATE INDEX IF NOT EXISTS properties_tc_price_from_id_ll ON properties (tenant_id, country, price_from NULLS FIRST, id) INCLUDE (latitude, longitude);
CREATE INDEX IF NOT EXISTS properties_tc_bedrooms_id_ll ON properties (tenant_id, country, bedrooms NULLS FIRST, id) INCLUDE (latitude, longitude);
CREATE INDEX IF NOT EXISTS properties_tc_bathrooms_id_ll ON properties (tenant_id, country, bathrooms NULLS FIRST, id) INCLUDE (latitude, longitude);
CREATE INDEX IF NOT EXISTS properties_tc_suburb_id_ll ON properties (tenant_id, country, suburb, id) INCLUDE (latitude, longitude);
CREATE INDEX IF NOT EXISTS properties_tc_featured_id ON properties (tenant_id, country, featured, id);
-- Superseded by the indexes above (databases created before they existed).
DROP INDEX IF EXISTS properties_tc_id;
DROP INDEX IF EXISTS properties_tc_agency_id;
DROP INDEX IF EXISTS properties_tc_status;
DROP INDEX IF EXISTS properties_tc_status_id;
DROP INDEX IF EXISTS properties_tc_category;
DROP INDEX IF EXISTS properties_tc_category_id;
DROP INDEX IF EXISTS properties_tc_property_type;
DROP INDEX IF EXISTS properties_tc_property_type_id;
DROP INDEX IF EXISTS properties_tc_geo;
DROP INDEX IF EXISTS properties_tc_geo_id;
DROP INDEX IF EXISTS properties_tc_approved;
DROP INDEX IF EXISTS properties_tc_approved_id;
DROP INDEX IF EXISTS properties_tc_last_updated;
DROP INDEX IF EXISTS properties_tc_last_updated_id;
DROP INDEX IF EXISTS properties_tc_price_from;
DROP INDEX IF EXISTS properties_tc_price_from_id;
DROP INDEX IF EXISTS properties_tc_bedrooms;
DROP INDEX IF EXISTS properties_tc_bedrooms_id;
DROP INDEX IF EXISTS properties_tc_bathrooms;
DROP INDEX IF EXISTS properties_tc_bathrooms_id;
DROP INDEX IF EXISTS properties_tc_suburb;
DROP INDEX IF EXISTS properties_tc_suburb_id;
DROP INDEX IF EXISTS properties_tc_featured;

CREATE TABLE IF NOT EXISTS property_agents (
	property_id bigint NOT NULL REFERENCES properties (id),
	agent_id    bigint NOT NULL REFERENCES agents (id),
	position    integer NOT NULL,
	PRIMARY KEY (property_id, agent_id)
);
CREATE INDEX IF NOT EXISTS property_agents_agent ON property_agents (agent_id, property_id);

CREATE TABLE IF NOT EXISTS property_media (
	property_id bigint NOT NULL REFERENCES properties (id),
	kind        text COLLATE "C" NOT NULL CHECK (kind IN ('photo', 'virtualtour', 'floorplan')),
	url         text COLLATE "C" NOT NULL,
	thumbnail   text COLLATE "C" NOT NULL DEFAULT '',
	type        text COLLATE "C" NOT NULL DEFAULT '',
	caption     text COLLATE "C" NOT NULL DEFAULT '',
	position    integer NOT NULL,
	PRIMARY KEY (property_id, kind, position)
);

CREATE TABLE IF NOT EXISTS openhomes (
	property_id bigint NOT NULL REFERENCES properties (id),
	starts_at   timestamptz NOT NULL,
	ends_at     timestamptz NOT NULL,
	PRIMARY KEY (property_id, starts_at)
);
CREATE INDEX IF NOT EXISTS openhomes_property_ends ON openhomes (property_id, ends_at);
