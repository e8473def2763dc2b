-- Metabase (MySQL driver; Metabase connects to MySQL through MariaDB Connector/J).

-- source: captured on this machine from MariaDB Connector/J 2.7.6 (Debian libmariadb-java), the JDBC driver Metabase's MySQL driver uses: connection set-up
SELECT @@max_allowed_packet,@@system_time_zone,@@time_zone,@@auto_increment_increment;
set autocommit=1, sql_mode = concat(@@sql_mode,',STRICT_TRANS_TABLES');

-- source: captured from MariaDB Connector/J 2.7.6: DatabaseMetaData.getCatalogs / getSchemas
SELECT SCHEMA_NAME TABLE_CAT FROM INFORMATION_SCHEMA.SCHEMATA ORDER BY 1;
SELECT '' TABLE_SCHEM, '' TABLE_catalog FROM DUAL WHERE 1=0;

-- source: captured from MariaDB Connector/J 2.7.6: DatabaseMetaData.getTables(db, null, "%", [TABLE, VIEW, ...]) as Metabase's sql-jdbc sync calls it
SELECT TABLE_SCHEMA TABLE_CAT, NULL TABLE_SCHEM, TABLE_NAME, IF(TABLE_TYPE='BASE TABLE' or TABLE_TYPE='SYSTEM VERSIONED', 'TABLE', TABLE_TYPE) as TABLE_TYPE, TABLE_COMMENT REMARKS, NULL TYPE_CAT, NULL TYPE_SCHEM, NULL TYPE_NAME, NULL SELF_REFERENCING_COL_NAME, NULL REF_GENERATION FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA='${db}' AND TABLE_TYPE IN ('BASE TABLE','SYSTEM VERSIONED','VIEW') ORDER BY TABLE_TYPE, TABLE_SCHEMA, TABLE_NAME;

-- source: captured from MariaDB Connector/J 2.7.6: DatabaseMetaData.getColumns(db, null, table, "%")
SELECT TABLE_SCHEMA TABLE_CAT, NULL TABLE_SCHEM, TABLE_NAME, COLUMN_NAME, CASE data_type WHEN 'bit' THEN -7 WHEN 'tinyblob' THEN -3 WHEN 'mediumblob' THEN -4 WHEN 'longblob' THEN -4 WHEN 'blob' THEN -4 WHEN 'tinytext' THEN 12 WHEN 'mediumtext' THEN -1 WHEN 'longtext' THEN -1 WHEN 'text' THEN -1 WHEN 'date' THEN 91 WHEN 'datetime' THEN 93 WHEN 'decimal' THEN 3 WHEN 'double' THEN 8 WHEN 'enum' THEN 12 WHEN 'float' THEN 7 WHEN 'int' THEN IF( COLUMN_TYPE like '%unsigned%', 4,4) WHEN 'bigint' THEN -5 WHEN 'mediumint' THEN 4 WHEN 'null' THEN 0 WHEN 'set' THEN 12 WHEN 'smallint' THEN IF( COLUMN_TYPE like '%unsigned%', 5,5) WHEN 'varchar' THEN 12 WHEN 'varbinary' THEN -3 WHEN 'char' THEN 1 WHEN 'binary' THEN -2 WHEN 'time' THEN 92 WHEN 'timestamp' THEN 93 WHEN 'tinyint' THEN IF(COLUMN_TYPE like 'tinyint(1)%',-7,-6) WHEN 'year' THEN 91 ELSE 1111 END DATA_TYPE, IF(COLUMN_TYPE like 'tinyint(1)%', 'BIT', UCASE(IF( COLUMN_TYPE LIKE '%(%)%', CONCAT(SUBSTRING( COLUMN_TYPE,1, LOCATE('(',COLUMN_TYPE) - 1 ), SUBSTRING(COLUMN_TYPE ,1+locate(')', COLUMN_TYPE))), COLUMN_TYPE))) TYPE_NAME, CASE DATA_TYPE WHEN 'time' THEN IF(DATETIME_PRECISION = 0, 10, CAST(11 + DATETIME_PRECISION as signed integer)) WHEN 'date' THEN 10 WHEN 'datetime' THEN IF(DATETIME_PRECISION = 0, 19, CAST(20 + DATETIME_PRECISION as signed integer)) WHEN 'timestamp' THEN IF(DATETIME_PRECISION = 0, 19, CAST(20 + DATETIME_PRECISION as signed integer)) ELSE IF(NUMERIC_PRECISION IS NULL, LEAST(CHARACTER_MAXIMUM_LENGTH,2147483647), NUMERIC_PRECISION) END COLUMN_SIZE, 65535 BUFFER_LENGTH, CONVERT (CASE DATA_TYPE WHEN 'year' THEN NUMERIC_SCALE WHEN 'tinyint' THEN 0 ELSE NUMERIC_SCALE END, UNSIGNED INTEGER) DECIMAL_DIGITS, 10 NUM_PREC_RADIX, IF(IS_NULLABLE = 'yes',1,0) NULLABLE,COLUMN_COMMENT REMARKS, COLUMN_DEFAULT COLUMN_DEF, 0 SQL_DATA_TYPE, 0 SQL_DATETIME_SUB, LEAST(CHARACTER_OCTET_LENGTH,2147483647) CHAR_OCTET_LENGTH, ORDINAL_POSITION, IS_NULLABLE, NULL SCOPE_CATALOG, NULL SCOPE_SCHEMA, NULL SCOPE_TABLE, NULL SOURCE_DATA_TYPE, IF(EXTRA = 'auto_increment','YES','NO') IS_AUTOINCREMENT, IF(EXTRA in ('VIRTUAL', 'PERSISTENT', 'VIRTUAL GENERATED', 'STORED GENERATED') ,'YES','NO') IS_GENERATEDCOLUMN FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA='${db}' AND TABLE_NAME='${table}' ORDER BY TABLE_CAT, TABLE_SCHEM, TABLE_NAME, ORDINAL_POSITION;

-- source: captured from MariaDB Connector/J 2.7.6: DatabaseMetaData.getPrimaryKeys / getIndexInfo / getImportedKeys (the latter reads SHOW CREATE TABLE)
SELECT A.TABLE_SCHEMA TABLE_CAT, NULL TABLE_SCHEM, A.TABLE_NAME, A.COLUMN_NAME, B.SEQ_IN_INDEX KEY_SEQ, B.INDEX_NAME PK_NAME FROM INFORMATION_SCHEMA.COLUMNS A, INFORMATION_SCHEMA.STATISTICS B WHERE A.COLUMN_KEY in ('PRI','pri') AND B.INDEX_NAME='PRIMARY' AND A.TABLE_SCHEMA='${db}' AND B.TABLE_SCHEMA='${db}' AND A.TABLE_NAME='${table}' AND B.TABLE_NAME='${table}' AND A.TABLE_SCHEMA = B.TABLE_SCHEMA AND A.TABLE_NAME = B.TABLE_NAME AND A.COLUMN_NAME = B.COLUMN_NAME ORDER BY A.COLUMN_NAME;
SELECT TABLE_SCHEMA TABLE_CAT, NULL TABLE_SCHEM, TABLE_NAME, NON_UNIQUE, TABLE_SCHEMA INDEX_QUALIFIER, INDEX_NAME, 3 TYPE, SEQ_IN_INDEX ORDINAL_POSITION, COLUMN_NAME, COLLATION ASC_OR_DESC, CARDINALITY, NULL PAGES, NULL FILTER_CONDITION FROM INFORMATION_SCHEMA.STATISTICS WHERE TABLE_SCHEMA='${db}' AND TABLE_NAME = '${table}' ORDER BY NON_UNIQUE, TYPE, INDEX_NAME, ORDINAL_POSITION;
SHOW CREATE TABLE `${db}`.`${table}`;

-- source: metabase/metabase src/metabase/driver/mysql.clj (driver/db-default-timezone, 2020 version)
SELECT @@GLOBAL.time_zone AS global_tz, @@system_time_zone AS system_tz, time_format(   timediff(      now(), convert_tz(now(), @@GLOBAL.time_zone, '+00:00')   ),   '%H:%i' ) AS offset;

-- source: metabase/metabase src/metabase/driver/mysql.clj (sql-jdbc.execute/set-timezone-sql "SET @@session.time_zone = %s;")
SET @@session.time_zone = 'UTC';

-- source: metabase/metabase src/metabase/driver/mysql.clj (driver.common/current-db-time-native-query, older version)
select CONCAT(DATE_FORMAT(current_timestamp, '%Y-%m-%d %H:%i:%S.%f' ), ' ', @@system_time_zone);

-- source: metabase/metabase sql-jdbc describe-database simple-select-probe-query (have-select-privilege? check per table; its tests show SELECT TRUE AS "_" FROM "schema"."table" WHERE 1 <> 1 LIMIT 0)
SELECT TRUE AS `_` FROM `${db}`.`${table}` WHERE 1 <> 1 LIMIT 0;

-- source: metabase/metabase sql-jdbc sync fallback-metadata-query (docstring: SELECT * FROM public.my_table WHERE 1 <> 1 LIMIT 0)
SELECT * FROM `${db}`.`${table}` WHERE 1 <> 1 LIMIT 0;

-- source: GMS_NOTES §7.1 (Metabase's privilege sync reads SHOW GRANTS; recalled from metabase's mysql driver, not re-read here)
SHOW GRANTS FOR CURRENT_USER();

-- source: recalled shape of Metabase's table sample (fingerprinting) and field-values scans; exact SQL not re-read here. Reads rows: dpsql must refuse or answer with a DP release
SELECT `${table}`.`${column}` AS `${column}` FROM `${db}`.`${table}` LIMIT 10000;
SELECT `${table}`.`${column}` AS `${column}` FROM `${db}`.`${table}` GROUP BY `${table}`.`${column}` ORDER BY `${table}`.`${column}` ASC LIMIT 1000;

-- source: recalled shape of the SQL Metabase's query builder sends for "Count of rows by <column>" and "Sum of <expression> by <column>" (sorted by the aggregate); exact SQL not re-read here. dpsql must answer with a DP release of noisy aggregates
SELECT `${table}`.`${column}` AS `${column}`, count(*) AS `count` FROM `${db}`.`${table}` GROUP BY `${table}`.`${column}` ORDER BY `count` DESC, `${table}`.`${column}` ASC LIMIT 2000;
SET dp_contribution_bounds = '0,100';
SELECT `${table}`.`${column}` AS `${column}`, sum(char_length(`${table}`.`${column}`)) AS `sum` FROM `${db}`.`${table}` GROUP BY `${table}`.`${column}` ORDER BY `sum` DESC, `${table}`.`${column}` ASC LIMIT 2000;
