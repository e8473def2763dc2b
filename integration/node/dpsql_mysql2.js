// Runs statements through mysql2's promise API on one connection and prints
// what the driver reported as JSON. Reads a request on standard input:
//   {host, port, user, password, database, tls, ca_file,
//    statements: [{sql, prepared, args, warnings}]}
// and prints {connect_error: {...}} or {results: [{columns, types, rows,
// error: {code, state, message}, warnings: [{level, code, message}]}]}
// (warnings, from SHOW WARNINGS, when the statement asks for them).
//
// Plain statements use query() (text protocol); prepared ones use execute(),
// which prepares server-side (COM_STMT_PREPARE) and binds the arguments.
// Run by integration/clients (node.go) after `npm ci` in this directory.
'use strict';

const fs = require('fs');
const mysql = require('mysql2/promise');

const typeNames = Object.fromEntries(Object.entries(mysql.Types).map(([name, id]) => [id, name]));

function error(e) {
  return {
    code: typeof e.errno === 'number' ? e.errno : 0,
    state: e.sqlState || '',
    message: e.sqlMessage || e.message || String(e),
  };
}

function render(v) {
  if (v === null || v === undefined) return null;
  if (Buffer.isBuffer(v)) return v.toString('utf8');
  if (v instanceof Date) return v.toISOString();
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

async function run(conn, st) {
  if (st.meta) return { error: { code: 0, message: 'mysql2 has no JDBC metadata call ' + st.meta } };
  try {
    const [rows, fields] = st.prepared
      ? await conn.execute({ sql: st.sql, rowsAsArray: true }, st.args || [])
      : await conn.query({ sql: st.sql, rowsAsArray: true });
    if (!fields) return {}; // OK packet: no result set
    return {
      columns: fields.map((f) => f.name),
      types: fields.map((f) => typeNames[f.columnType] || String(f.columnType)),
      rows: rows.map((row) => row.map(render)),
    };
  } catch (e) {
    if (!e.sqlMessage && !e.errno) throw e; // not a server error: the harness reports it
    return { error: error(e) };
  }
}

async function main() {
  const req = JSON.parse(fs.readFileSync(0, 'utf8'));
  const opts = {
    host: req.host,
    port: req.port,
    user: req.user,
    password: req.password,
    database: req.database || undefined,
    connectTimeout: 10000,
    supportBigNumbers: true,
    bigNumberStrings: true, // BIGINT and DECIMAL as exact strings
    dateStrings: true, // temporal values as the server's text
  };
  if (req.tls) {
    opts.ssl = req.ca_file ? { ca: fs.readFileSync(req.ca_file) } : { rejectUnauthorized: false };
  }
  let conn;
  try {
    conn = await mysql.createConnection(opts);
  } catch (e) {
    process.stdout.write(JSON.stringify({ connect_error: error(e) }) + '\n');
    return;
  }
  const results = [];
  try {
    for (const st of req.statements) {
      const r = await run(conn, st);
      if (st.warnings) {
        const [rows] = await conn.query({ sql: 'SHOW WARNINGS', rowsAsArray: true });
        r.warnings = rows.map(([level, code, message]) => ({ level, code: Number(code), message: render(message) }));
      }
      results.push(r);
    }
  } finally {
    await conn.end().catch(() => conn.destroy());
  }
  process.stdout.write(JSON.stringify({ results }) + '\n');
}

main().catch((e) => {
  process.stderr.write((e && e.stack) || String(e));
  process.exit(1);
});
