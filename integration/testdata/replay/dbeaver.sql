-- DBeaver (MySQL plugin; its default driver is MySQL Connector/J).

-- source: GMS_NOTES §7.1 (MySQL Connector/J 8 connection init query, as DBeaver's default driver sends it)
SELECT @@session.auto_increment_increment AS auto_increment_increment, @@character_set_client AS character_set_client, @@character_set_connection AS character_set_connection, @@character_set_results AS character_set_results, @@character_set_server AS character_set_server, @@collation_server AS collation_server, @@collation_connection AS collation_connection, @@init_connect AS init_connect, @@interactive_timeout AS interactive_timeout, @@license AS license, @@lower_case_table_names AS lower_case_table_names, @@max_allowed_packet AS max_allowed_packet, @@net_write_timeout AS net_write_timeout, @@performance_schema AS performance_schema, @@query_cache_size AS query_cache_size, @@query_cache_type AS query_cache_type, @@sql_mode AS sql_mode, @@system_time_zone AS system_time_zone, @@time_zone AS time_zone, @@transaction_isolation AS transaction_isolation, @@wait_timeout AS wait_timeout;
SET NAMES utf8mb4;
SET character_set_results = NULL;
SET autocommit=1;

-- source: dbeaver/dbeaver plugins/org.jkiss.dbeaver.ext.mysql/src/org/jkiss/dbeaver/ext/mysql/model/MySQLDataSource.java (initialize: engines, charsets, collations, catalogs; users, privileges, status)
SHOW ENGINES;
SHOW CHARSET;
SHOW COLLATION;
SELECT * FROM information_schema.SCHEMATA;
SELECT DATABASE();
use `${db}`;
SHOW PRIVILEGES;
SHOW VARIABLES;
SHOW STATUS;
SHOW GLOBAL STATUS;
SELECT * FROM mysql.user ORDER BY user;

-- source: dbeaver/dbeaver plugins/org.jkiss.dbeaver.ext.mysql/src/org/jkiss/dbeaver/ext/mysql/model/MySQLCatalog.java (TableCache, columns, IndexCache, ConstraintCache, ProceduresCache, TriggerCache, EventCache)
SHOW FULL TABLES FROM `${db}`;
SHOW FULL TABLES FROM `${db}` LIKE '${table}';
SELECT * FROM information_schema.COLUMNS WHERE TABLE_SCHEMA='${db}' AND TABLE_NAME='${table}' ORDER BY ORDINAL_POSITION;
SELECT * FROM information_schema.STATISTICS WHERE TABLE_SCHEMA='${db}' AND TABLE_NAME='${table}' ORDER BY INDEX_NAME,SEQ_IN_INDEX;
SELECT kc.CONSTRAINT_NAME,kc.TABLE_NAME,kc.COLUMN_NAME,kc.ORDINAL_POSITION
FROM INFORMATION_SCHEMA.KEY_COLUMN_USAGE kc WHERE kc.TABLE_SCHEMA='${db}' AND kc.REFERENCED_TABLE_NAME IS NULL AND kc.TABLE_NAME='${table}'
ORDER BY kc.CONSTRAINT_NAME,kc.ORDINAL_POSITION;
SELECT * FROM information_schema.ROUTINES
WHERE ROUTINE_SCHEMA='${db}'
ORDER BY ROUTINE_NAME;
SHOW FULL TRIGGERS FROM `${db}`;
SELECT * FROM information_schema.EVENTS WHERE EVENT_SCHEMA='${db}';

-- source: DBeaver table editor "DDL" and "Properties" tabs (SHOW CREATE TABLE, SHOW TABLE STATUS; recalled from MySQLTable.java)
SHOW CREATE TABLE `${db}`.`${table}`;
SHOW TABLE STATUS FROM `${db}` LIKE '${table}';

-- source: mysql/mysql-connector-j src/main/user-impl/java/com/mysql/cj/jdbc/DatabaseMetaDataUsingInfoSchema.java getTables(catalog, null, "%", {"TABLE","VIEW"}) with its ? parameters bound (the query GMS v0.20.0 panics on when a view exists: GMS_NOTES §7.1, dolt#9347)
SELECT TABLE_SCHEMA AS TABLE_CAT, NULL AS TABLE_SCHEM, TABLE_NAME, CASE WHEN TABLE_TYPE='BASE TABLE' THEN CASE WHEN TABLE_SCHEMA = 'mysql' OR TABLE_SCHEMA = 'performance_schema' THEN 'SYSTEM TABLE' ELSE 'TABLE' END WHEN TABLE_TYPE='TEMPORARY' THEN 'LOCAL_TEMPORARY' ELSE TABLE_TYPE END AS TABLE_TYPE, TABLE_COMMENT AS REMARKS, NULL AS TYPE_CAT, NULL AS TYPE_SCHEM, NULL AS TYPE_NAME, NULL AS SELF_REFERENCING_COL_NAME, NULL AS REF_GENERATION FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = '${db}' AND TABLE_NAME LIKE '%' HAVING TABLE_TYPE IN ('TABLE','VIEW',null,null,null) ORDER BY TABLE_TYPE, TABLE_SCHEMA, TABLE_NAME;
SELECT TABLE_SCHEMA AS TABLE_CAT, NULL AS TABLE_SCHEM, TABLE_NAME, CASE WHEN TABLE_TYPE='BASE TABLE' THEN CASE WHEN TABLE_SCHEMA = 'mysql' OR TABLE_SCHEMA = 'performance_schema' THEN 'SYSTEM TABLE' ELSE 'TABLE' END WHEN TABLE_TYPE='TEMPORARY' THEN 'LOCAL_TEMPORARY' ELSE TABLE_TYPE END AS TABLE_TYPE, TABLE_COMMENT AS REMARKS, NULL AS TYPE_CAT, NULL AS TYPE_SCHEM, NULL AS TYPE_NAME, NULL AS SELF_REFERENCING_COL_NAME, NULL AS REF_GENERATION FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = '${db}' AND TABLE_NAME LIKE '%' ORDER BY TABLE_TYPE, TABLE_SCHEMA, TABLE_NAME;

-- source: DBeaver data editor's first page of a table (recalled: SELECT * ... LIMIT 200); reads rows: dpsql must refuse or answer with a DP release
SELECT * FROM `${db}`.`${table}` LIMIT 0, 200;
