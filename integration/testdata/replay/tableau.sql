-- Tableau (MySQL connector over the MySQL ODBC driver).

-- source: query log in https://github.com/implydata/plyql/issues/31 (Tableau connecting to a MySQL-protocol gateway) and https://github.com/src-d/go-mysql-server/issues/468
SET NAMES utf8;
SET character_set_results = NULL;
SET SQL_AUTO_IS_NULL = 0;
set @@sql_select_limit=DEFAULT;
SELECT CONNECTION_ID();
SELECT `table_name`, `column_name`
FROM `information_schema`.`columns`
WHERE `data_type`='enum' AND `table_schema`='';
SHOW DATABASES LIKE '%';

-- source: https://github.com/implydata/plyql/issues/31 logs DROP TABLE `#Tableau_sid_00000001_1_Connect`, the clean-up of the temporary-table capability probe (the CREATE is inferred; GMS_NOTES §7.1: needs the CREATE TEMPORARY TABLES grant; tableau/connector-plugin-sdk#785)
CREATE TEMPORARY TABLE `#Tableau_sid_00000001_1_Connect` (`COL` INT);
DROP TABLE `#Tableau_sid_00000001_1_Connect`;

-- source: https://github.com/src-d/go-mysql-server/issues/489 (the issue quotes it inside a larger statement; the subquery as sent)
SELECT * FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = DATABASE() AND ( TABLE_TYPE='BASE TABLE' OR TABLE_TYPE='VIEW' );

-- source: MySQL ODBC driver catalog functions Tableau calls for the table list and columns (SQLTables / SQLColumns; recalled, not re-read here)
SELECT TABLE_NAME, TABLE_COMMENT, IF(TABLE_TYPE='BASE TABLE', 'TABLE', TABLE_TYPE), TABLE_SCHEMA FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA LIKE '${db}' AND ( TABLE_TYPE='BASE TABLE' OR TABLE_TYPE='VIEW' ) ORDER BY TABLE_SCHEMA, TABLE_NAME;
SHOW KEYS FROM `${db}`.`${table}`;

-- source: Tableau's column metadata probe (a zero-row SELECT of the table, recalled) and its first-level distinct-values query for a dimension; the second reads rows: dpsql must refuse or answer with a DP release
SELECT * FROM `${db}`.`${table}` LIMIT 0;
SELECT `${table}`.`${column}` AS `${column}` FROM `${db}`.`${table}` GROUP BY 1;
