-- The legacy schema (design.md §7) on SQLite.
--
-- Timestamps (last_updated, starts_at, ends_at) are TEXT in ISO-8601 UTC with
-- second precision, always 20 characters: 2026-03-14T09:26:53Z. Dates
-- (approved) are TEXT YYYY-MM-DD. Fixed width and UTC make byte order equal
-- time order, so comparisons and ORDER BY work on the text, and the sqlite3
-- shell shows them readably. Booleans are INTEGER 0/1. Text compares with
-- SQLite's default BINARY collation (byte-wise), as on the other engines.
--
-- Every statement is idempotent; statements are separated by a semicolon at
-- the end of a line.

CREATE TABLE IF NOT EXISTS tenants (
	id   INTEGER PRIMARY KEY,
	name TEXT NOT NULL UNIQUE
);

CREATE TABLE IF NOT EXISTS agents (
	id                INTEGER PRIMARY KEY,
	tenant_id         INTEGER NOT NULL REFERENCES tenants (id),
	country           TEXT NOT NULL,
	name              TEXT NOT NULL,
	username          TEXT NOT NULL,
	phone             TEXT NOT NULL DEFAULT '',
	after_hours_phone TEXT NOT NULL DEFAULT '',
	mobile_phone      TEXT NOT NULL DEFAULT '',
	email             TEXT NOT NULL DEFAULT '',
	description       TEXT NOT NULL DEFAULT '',
	photo_url         TEXT NOT NULL DEFAULT '',
	website_url       TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX IF NOT EXISTS agents_tenant_username ON agents (tenant_id, username);
CREATE INDEX IF NOT EXISTS agents_tc_id ON agents (tenant_id, country, id);
CREATE INDEX IF NOT EXISTS agents_tc_name ON agents (tenant_id, country, name);
CREATE INDEX IF NOT EXISTS agents_tc_username ON agents (tenant_id, country, username);
CREATE INDEX IF NOT EXISTS agents_tc_lower_username ON agents (tenant_id, country, lower(username));

CREATE TABLE IF NOT EXISTS properties (
	id              INTEGER PRIMARY KEY,
	tenant_id       INTEGER NOT NULL REFERENCES tenants (id),
	country         TEXT NOT NULL,
	agency_id       TEXT NOT NULL,
	last_updated    TEXT NOT NULL,
	approved        TEXT,
	street_number   TEXT NOT NULL DEFAULT '',
	street_name     TEXT NOT NULL DEFAULT '',
	address_display INTEGER NOT NULL DEFAULT 1,
	status          TEXT NOT NULL,
	latitude        REAL NOT NULL,
	longitude       REAL NOT NULL,
	price_text      TEXT NOT NULL DEFAULT '',
	price_from      REAL,
	price_to        REAL,
	price_type      TEXT NOT NULL DEFAULT '',
	category        TEXT NOT NULL,
	property_type   TEXT NOT NULL DEFAULT '',
	suburb          TEXT NOT NULL DEFAULT '',
	area            TEXT NOT NULL DEFAULT '',
	region          TEXT NOT NULL DEFAULT '',
	bedrooms        INTEGER,
	bathrooms       INTEGER,
	floor_size      REAL,
	lot_size        REAL,
	built_in        TEXT NOT NULL DEFAULT '',
	description     TEXT NOT NULL DEFAULT '',
	featured        INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX IF NOT EXISTS properties_tenant_agency_id ON properties (tenant_id, agency_id);
-- The indexes of the order fields (suffix _ll) hold id, latitude and
-- longitude: a geo search whose box is large walks the scope in the order's
-- index and tests the box on each entry (geoWalkQuery), index-only. They
-- replace the indexes without them, dropped at the end of this file.
CREATE INDEX IF NOT EXISTS properties_tc_id_ll ON properties (tenant_id, country, id, latitude, longitude);
CREATE INDEX IF NOT EXISTS properties_tc_agency_id_ll ON properties (tenant_id, country, agency_id, id, latitude, longitude);
CREATE INDEX IF NOT EXISTS properties_tc_status_ll ON properties (tenant_id, country, status, id, latitude, longitude);
CREATE INDEX IF NOT EXISTS properties_tc_category_ll ON properties (tenant_id, country, category, id, latitude, longitude);
CREATE INDEX IF NOT EXISTS properties_tc_property_type_ll ON properties (tenant_id, country, property_type, id, latitude, longitude);
CREATE INDEX IF NOT EXISTS properties_tc_lower_property_type ON properties (tenant_id, country, lower(property_type));
CREATE INDEX IF NOT EXISTS properties_tc_lower_price_type ON properties (tenant_id, country, lower(price_type));
CREATE INDEX IF NOT EXISTS properties_tc_lower_street_name ON properties (tenant_id, country, lower(street_name));
-- The geo index holds price_from: a bounding box ordered by price is sorted
-- from the index alone (index-only), not read from the table row by row.
CREATE INDEX IF NOT EXISTS properties_tc_geo_price ON properties (tenant_id, country, latitude, longitude, price_from);
DROP INDEX IF EXISTS properties_tc_geo;
CREATE INDEX IF NOT EXISTS properties_tc_approved_ll ON properties (tenant_id, country, approved, id, latitude, longitude);
CREATE INDEX IF NOT EXISTS properties_tc_last_updated_ll ON properties (tenant_id, country, last_updated, id, latitude, longitude);
CREATE INDEX IF NOT EXISTS properties_tc_price_from_ll ON properties (tenant_id, country, price_from, id, latitude, longitude);
CREATE INDEX IF NOT EXISTS properties_tc_bedrooms_ll ON properties (tenant_id, country, bedrooms, id, latitude, longitude);
CREATE INDEX IF NOT EXISTS properties_tc_bathrooms_ll ON properties (tenant_id, country, bathrooms, id, latitude, longitude);
CREATE INDEX IF NOT EXISTS properties_tc_suburb_ll ON properties (tenant_id, country, suburb, id, latitude, longitude);
CREATE INDEX IF NOT EXISTS properties_tc_featured ON properties (tenant_id, country, featured);
-- Superseded by the _ll indexes above (databases created before them).
DROP INDEX IF EXISTS properties_tc_id;
DROP INDEX IF EXISTS properties_tc_agency_id;
DROP INDEX IF EXISTS properties_tc_status;
DROP INDEX IF EXISTS properties_tc_category;
DROP INDEX IF EXISTS properties_tc_property_type;
DROP INDEX IF EXISTS properties_tc_approved;
DROP INDEX IF EXISTS properties_tc_last_updated;
DROP INDEX IF EXISTS properties_tc_price_from;
DROP INDEX IF EXISTS properties_tc_bedrooms;
DROP INDEX IF EXISTS properties_tc_bathrooms;
DROP INDEX IF EXISTS properties_tc_suburb;

-- The child tables are WITHOUT ROWID: their rows are stored in their
-- primary key, clustered by property, so load_children reads a property's
-- rows with one seek and a scan, not a seek in the key's index and then one
-- in the table per row (docs/performance.md, session 13). A database
-- created before keeps its rowid tables (CREATE TABLE IF NOT EXISTS leaves
-- them as they are): same columns, same statements, same answers.
CREATE TABLE IF NOT EXISTS property_agents (
	property_id INTEGER NOT NULL REFERENCES properties (id),
	agent_id    INTEGER NOT NULL REFERENCES agents (id),
	position    INTEGER NOT NULL,
	PRIMARY KEY (property_id, agent_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS property_agents_agent ON property_agents (agent_id, property_id);

CREATE TABLE IF NOT EXISTS property_media (
	property_id INTEGER NOT NULL REFERENCES properties (id),
	kind        TEXT NOT NULL CHECK (kind IN ('photo', 'virtualtour', 'floorplan')),
	url         TEXT NOT NULL,
	thumbnail   TEXT NOT NULL DEFAULT '',
	type        TEXT NOT NULL DEFAULT '',
	caption     TEXT NOT NULL DEFAULT '',
	position    INTEGER NOT NULL,
	PRIMARY KEY (property_id, kind, position)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS openhomes (
	property_id INTEGER NOT NULL REFERENCES properties (id),
	starts_at   TEXT NOT NULL,
	ends_at     TEXT NOT NULL,
	PRIMARY KEY (property_id, starts_at)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS openhomes_property_ends ON openhomes (property_id, ends_at);
