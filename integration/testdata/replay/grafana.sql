-- Grafana (MySQL data source: go-sql-driver/mysql backend, query editor metadata from the frontend).

-- source: Grafana backend health check (sqleng: SELECT 1 on a pooled go-sql-driver connection; recalled)
SELECT 1;

-- source: grafana/grafana public/app/plugins/datasource/mysql/mySqlMetaQuery.ts (showDatabases, buildTableQuery, buildColumnQuery)
SELECT DISTINCT TABLE_SCHEMA from information_schema.TABLES where TABLE_TYPE != 'SYSTEM VIEW' ORDER BY TABLE_SCHEMA;
SELECT table_name FROM information_schema.tables WHERE table_schema = '${db}' ORDER BY table_name;
SELECT table_name FROM information_schema.tables WHERE table_schema = database() ORDER BY table_name;
SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = '${db}' AND table_name = '${table}' ORDER BY column_name;
SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = '${db}' AND table_name = '${table}' AND data_type IN ('timestamp','datetime','bigint','int','double','float') ORDER BY column_name;
SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = '${db}' AND table_name = '${table}' AND data_type IN ('text','tinytext','mediumtext','longtext','varchar','char') ORDER BY column_name;

-- source: Grafana MySQL macros as expanded by pkg/tsdb/mysql/macros.go ($__timeFilter, $__timeGroup, $__unixEpochFrom; recalled) and GMS_NOTES §7.1/§7.2
SELECT UNIX_TIMESTAMP('2024-01-02 03:04:05') AS time_sec, FROM_UNIXTIME(1704164645) AS t;
SELECT cast(cast(UNIX_TIMESTAMP('2024-01-02 03:04:05')/(300) as signed)*300 as signed) AS time;
SELECT 1 AS value WHERE '2024-01-02 03:04:05' BETWEEN FROM_UNIXTIME(1704067200) AND FROM_UNIXTIME(1704153600);

-- source: Grafana template-variable query a dashboard typically defines (values of a column); reads rows: dpsql must refuse or answer with a DP release
SELECT DISTINCT `${column}` FROM `${db}`.`${table}`;

-- source: Grafana documentation, MySQL data source, query variables (a variable query may return __text and __value columns; recalled); a dashboard's own sorted form; reads rows: dpsql must refuse or answer with a DP release
SELECT DISTINCT `${column}` AS __text, `${column}` AS __value FROM `${db}`.`${table}` ORDER BY __text;

-- source: Grafana MySQL data source docs (table panel query "SELECT … AS metric, … AS value … GROUP BY … ORDER BY …"), as a user writes it for a count by key. dpsql must answer with a DP release of noisy aggregates
SELECT ${column} AS metric, COUNT(*) AS value FROM ${table} GROUP BY 1 ORDER BY 2 DESC LIMIT 20;
