package sqlstore

import (
	// The database/sql drivers of the supported dialects.
	_ "github.com/go-sql-driver/mysql"
	_ "modernc.org/sqlite"
)
