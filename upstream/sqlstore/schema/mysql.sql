-- The legacy schema (design.md §7) on MySQL 8 / MariaDB 10.5+.
--
-- Timestamps are DATETIME holding UTC (the store connects with loc=UTC and
-- parseTime=true); approved is DATE. Text is utf8mb4 with the utf8mb4_bin
-- collation, so ORDER BY compares byte-wise as on SQLite and PostgreSQL; the
-- store matches case-insensitively with lower(col) = lower(arg). MariaDB has
-- no functional indexes, so lower() filters use the (tenant_id, country)
-- prefix of the plain indexes. Indexes are declared inline so that CREATE
-- TABLE IF NOT EXISTS keeps the file idempotent. The geo index holds
-- price_from: a bounding box ordered by price is sorted from the index alone.
-- The indexes of the order fields (suffix _ll) hold id, latitude and
-- longitude: a geo search whose box is large walks the scope in the order's
-- index and tests the box on each entry (geoWalkQuery), index-only. A
-- database created before keeps its tables as they were: Migrate adds the
-- _ll indexes and drops the ones they replace with one ALTER TABLE (MySQL 8
-- has no ADD INDEX IF NOT EXISTS; see mysqlIndexUpgrade), as does the ALTER
-- TABLE given in docs/sql.md. (A database created before price_from was
-- added to the geo index keeps the old one: docs/sql.md gives the ALTER
-- TABLE.)

CREATE TABLE IF NOT EXISTS tenants (
	id   BIGINT NOT NULL PRIMARY KEY,
	name VARCHAR(191) NOT NULL,
	UNIQUE KEY tenants_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS agents (
	id                BIGINT NOT NULL PRIMARY KEY,
	tenant_id         BIGINT NOT NULL,
	country           VARCHAR(8) NOT NULL,
	name              VARCHAR(191) NOT NULL,
	username          VARCHAR(191) NOT NULL,
	phone             VARCHAR(64) NOT NULL DEFAULT '',
	after_hours_phone VARCHAR(64) NOT NULL DEFAULT '',
	mobile_phone      VARCHAR(64) NOT NULL DEFAULT '',
	email             VARCHAR(255) NOT NULL DEFAULT '',
	description       VARCHAR(1024) NOT NULL DEFAULT '',
	photo_url         VARCHAR(1024) NOT NULL DEFAULT '',
	website_url       VARCHAR(1024) NOT NULL DEFAULT '',
	UNIQUE KEY agents_tenant_username (tenant_id, username),
	KEY agents_tc_id (tenant_id, country, id),
	KEY agents_tc_name (tenant_id, country, name),
	KEY agents_tc_username (tenant_id, country, username),
	CONSTRAINT agents_tenant FOREIGN KEY (tenant_id) REFERENCES tenants (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS properties (
	id              BIGINT NOT NULL PRIMARY KEY,
	tenant_id       BIGINT NOT NULL,
	country         VARCHAR(8) NOT NULL,
	agency_id       VARCHAR(191) NOT NULL,
	last_updated    DATETIME NOT NULL,
	approved        DATE NULL,
	street_number   VARCHAR(64) NOT NULL DEFAULT '',
	street_name     VARCHAR(191) NOT NULL DEFAULT '',
	address_display BOOLEAN NOT NULL DEFAULT TRUE,
	status          VARCHAR(16) NOT NULL,
	latitude        DOUBLE NOT NULL,
	longitude       DOUBLE NOT NULL,
	price_text      VARCHAR(255) NOT NULL DEFAULT '',
	price_from      DOUBLE NULL,
	price_to        DOUBLE NULL,
	price_type      VARCHAR(64) NOT NULL DEFAULT '',
	category        VARCHAR(32) NOT NULL,
	property_type   VARCHAR(64) NOT NULL DEFAULT '',
	suburb          VARCHAR(191) NOT NULL DEFAULT '',
	area            VARCHAR(191) NOT NULL DEFAULT '',
	region          VARCHAR(191) NOT NULL DEFAULT '',
	bedrooms        INT NULL,
	bathrooms       INT NULL,
	floor_size      DOUBLE NULL,
	lot_size        DOUBLE NULL,
	built_in        VARCHAR(32) NOT NULL DEFAULT '',
	description     VARCHAR(255) NOT NULL DEFAULT '',
	featured        BOOLEAN NOT NULL DEFAULT FALSE,
	UNIQUE KEY properties_tenant_agency_id (tenant_id, agency_id),
	KEY properties_tc_id_ll (tenant_id, country, id, latitude, longitude),
	KEY properties_tc_agency_id_ll (tenant_id, country, agency_id, id, latitude, longitude),
	KEY properties_tc_status_ll (tenant_id, country, status, id, latitude, longitude),
	KEY properties_tc_category_ll (tenant_id, country, category, id, latitude, longitude),
	KEY properties_tc_property_type_ll (tenant_id, country, property_type, id, latitude, longitude),
	KEY properties_tc_price_type (tenant_id, country, price_type),
	KEY properties_tc_street_name (tenant_id, country, street_name),
	KEY properties_tc_geo (tenant_id, country, latitude, longitude, price_from),
	KEY properties_tc_approved_ll (tenant_id, country, approved, id, latitude, longitude),
	KEY properties_tc_last_updated_ll (tenant_id, country, last_updated, id, latitude, longitude),
	KEY properties_tc_price_from_ll (tenant_id, country, price_from, id, latitude, longitude),
	KEY properties_tc_bedrooms_ll (tenant_id, country, bedrooms, id, latitude, longitude),
	KEY properties_tc_bathrooms_ll (tenant_id, country, bathrooms, id, latitude, longitude),
	KEY properties_tc_suburb_ll (tenant_id, country, suburb, id, latitude, longitude),
	KEY properties_tc_featured (tenant_id, country, featured),
	CONSTRAINT properties_tenant FOREIGN KEY (tenant_id) REFERENCES tenants (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS property_agents (
	property_id BIGINT NOT NULL,
	agent_id    BIGINT NOT NULL,
	position    INT NOT NULL,
	PRIMARY KEY (property_id, agent_id),
	KEY property_agents_agent (agent_id, property_id),
	CONSTRAINT property_agents_property FOREIGN KEY (property_id) REFERENCES properties (id),
	CONSTRAINT property_agents_agent FOREIGN KEY (agent_id) REFERENCES agents (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS property_media (
	property_id BIGINT NOT NULL,
	kind        VARCHAR(16) NOT NULL,
	url         VARCHAR(1024) NOT NULL,
	thumbnail   VARCHAR(1024) NOT NULL DEFAULT '',
	type        VARCHAR(32) NOT NULL DEFAULT '',
	caption     VARCHAR(255) NOT NULL DEFAULT '',
	position    INT NOT NULL,
	PRIMARY KEY (property_id, kind, position),
	CONSTRAINT property_media_kind CHECK (kind IN ('photo', 'virtualtour', 'floorplan')),
	CONSTRAINT property_media_property FOREIGN KEY (property_id) REFERENCES properties (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS openhomes (
	property_id BIGINT NOT NULL,
	starts_at   DATETIME NOT NULL,
	ends_at     DATETIME NOT NULL,
	PRIMARY KEY (property_id, starts_at),
	KEY openhomes_property_ends (property_id, ends_at),
	CONSTRAINT openhomes_property FOREIGN KEY (property_id) REFERENCES properties (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
