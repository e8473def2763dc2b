-- Apache Superset (SQLAlchemy MySQL dialect over PyMySQL; Superset's inspector calls).

-- source: captured on this machine from SQLAlchemy 1.4.46 + PyMySQL 1.0.2 (Debian): engine.connect() dialect initialisation
SET NAMES utf8mb4;
SELECT VERSION();
SELECT DATABASE();
SELECT @@transaction_isolation;
SELECT @@sql_mode;
SELECT @@lower_case_table_names;

-- source: SQLAlchemy 1.4 lib/sqlalchemy/engine/default.py _check_unicode_returns (Python 2 code path; GMS_NOTES §7.2 lists it as a Superset probe)
SELECT CAST('test plain returns' AS CHAR(60)) AS anon_1;

-- source: Superset test connection (engine.dialect.do_ping runs SELECT 1)
SELECT 1;

-- source: captured from SQLAlchemy 1.4.46: Inspector.get_schema_names, get_table_names / get_view_names, get_columns / get_pk_constraint / get_indexes / get_foreign_keys, has_table
SHOW schemas;
SHOW FULL TABLES FROM `${db}`;
SHOW CREATE TABLE `${db}`.`${table}`;
SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = '${db}' AND table_name = '${table}';

-- source: SQLAlchemy 1.4 lib/sqlalchemy/dialects/mysql/base.py (_describe_table, used for views; and the older SHOW VARIABLES settings probe) and GMS_NOTES §7.2
DESCRIBE `${db}`.`${table}`;
SHOW VARIABLES LIKE 'sql_mode';
SHOW VARIABLES LIKE 'lower_case_table_names';
SELECT * FROM information_schema.views WHERE table_schema = '${db}';

-- source: recalled shape of Superset's SQL Lab table preview (select_star); reads rows: dpsql must refuse or answer with a DP release
SELECT * FROM `${db}`.`${table}` LIMIT 100;

-- source: apache/superset superset/connectors/sqla/models.py values_for_column (native filter values: sa.select([col.label("column_values")]).select_from(tbl).distinct().limit(limit), compiled with literal binds); reads rows: dpsql must refuse or answer with a DP release
SELECT DISTINCT `${column}` AS column_values FROM `${db}`.`${table}` LIMIT 10000;
