-- MySQL Workbench (SQL editor; Connector/C++).

-- source: MySQL Workbench SQL editor connection set-up (wb_sql_editor_form.cpp; recalled, not re-read here) and GMS_NOTES §7.1
SET SQL_SAFE_UPDATES=1;
SELECT current_user();
SHOW SESSION VARIABLES LIKE 'lower_case_table_names';
SHOW SESSION STATUS LIKE 'Ssl_cipher';
SELECT CONNECTION_ID();
SHOW SESSION VARIABLES LIKE 'version_comment';
SHOW DATABASES;

-- source: mysql/mysql-workbench backend/wbprivate/sqlide/wb_sql_editor_tree_controller.cpp (do_fetch_live_schema_contents, fetch_column_data, fetch_trigger_data)
SHOW FULL TABLES FROM `${db}`;
SHOW PROCEDURE STATUS WHERE Db='${db}';
SHOW FUNCTION STATUS WHERE Db='${db}';
SHOW FULL COLUMNS FROM `${db}`.`${table}`;
SHOW TRIGGERS FROM `${db}` LIKE '${table}';

-- source: MySQL Workbench schema inspector and table info panel (recalled): index list, table status, DDL
SHOW INDEX FROM `${db}`.`${table}`;
SHOW TABLE STATUS FROM `${db}` LIKE '${table}';
SHOW CREATE TABLE `${db}`.`${table}`;

-- source: MySQL Workbench "Select Rows - Limit 1000" context action (recalled); reads rows: dpsql must refuse or answer with a DP release
SELECT * FROM `${db}`.`${table}` LIMIT 0, 1000;
