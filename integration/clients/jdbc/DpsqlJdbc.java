// DpsqlJdbc runs statements through MariaDB Connector/J (JDBC) on one
// connection and prints what the driver reported as JSON. It reads a request
// on standard input:
//   {"host", "port", "user", "password", "database", "tls", "ca_file",
//    "statements": [{"sql", "prepared", "args", "warnings"} | {"meta", "args"}]}
// and prints {"connect_error": {...}} or {"results": [{"columns", "types",
// "rows", "error": {"code", "state", "message"}, "warnings": [{"level",
// "code", "message"}]}]} (warnings, from SHOW WARNINGS, when the statement
// asks for them).
//
// Prepared statements are server-side (useServerPrepStmts=true), or
// client-side with "client_side"; an argument "date:YYYY-MM-DD" is bound as
// a java.sql.Date. "meta" names
// a java.sql.DatabaseMetaData call as DBeaver and Metabase make them.
// Compiled and run by integration/clients (jdbc.go); only the JDK and the
// driver jar are needed.

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

public final class DpsqlJdbc {
    public static void main(String[] argv) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        Map<String, Object> req = asMap(new Json(readAll(System.in)).value());
        String url = "jdbc:mariadb://" + req.get("host") + ":" + num(req.get("port"))
                + "/" + str(req.getOrDefault("database", ""));
        Properties p = new Properties();
        p.setProperty("user", str(req.get("user")));
        p.setProperty("password", str(req.get("password")));
        p.setProperty("useServerPrepStmts", "true");
        p.setProperty("connectTimeout", "10000");
        if (Boolean.TRUE.equals(req.get("tls"))) {
            p.setProperty("useSsl", "true");
            String ca = str(req.get("ca_file"));
            if (ca.isEmpty()) {
                p.setProperty("trustServerCertificate", "true");
            } else {
                p.setProperty("serverSslCert", ca);
            }
        }
        Map<String, Object> resp = new LinkedHashMap<>();
        Connection conn;
        try {
            conn = DriverManager.getConnection(url, p);
        } catch (SQLException e) {
            resp.put("connect_error", error(e));
            out.println(Json.write(resp));
            return;
        }
        List<Object> results = new ArrayList<>();
        try (conn) {
            for (Object o : asList(req.get("statements"))) {
                Map<String, Object> st = asMap(o);
                Map<String, Object> r;
                try {
                    r = run(conn, st);
                } catch (SQLException e) {
                    r = new LinkedHashMap<>();
                    r.put("error", error(e));
                } catch (RuntimeException e) {
                    r = new LinkedHashMap<>();
                    Map<String, Object> err = new LinkedHashMap<>();
                    err.put("code", 0);
                    err.put("message", e.toString());
                    r.put("error", err);
                }
                if (Boolean.TRUE.equals(st.get("warnings"))) {
                    r.put("warnings", warnings(conn));
                }
                results.add(r);
            }
        }
        resp.put("results", results);
        out.println(Json.write(resp));
    }

    static Map<String, Object> run(Connection conn, Map<String, Object> st) throws SQLException {
        List<Object> args = st.get("args") == null ? List.of() : asList(st.get("args"));
        String meta = str(st.get("meta"));
        if (!meta.isEmpty()) {
            return meta(conn.getMetaData(), meta, args);
        }
        String sql = str(st.get("sql"));
        if (Boolean.TRUE.equals(st.get("prepared"))) {
            // client_side: the driver interpolates the parameters into the
            // statement's text (Connector/J 2.x's clientPrepareStatement).
            try (PreparedStatement ps = Boolean.TRUE.equals(st.get("client_side"))
                    ? conn.unwrap(org.mariadb.jdbc.MariaDbConnection.class).clientPrepareStatement(sql)
                    : conn.prepareStatement(sql)) {
                for (int i = 0; i < args.size(); i++) {
                    Object a = args.get(i);
                    if (a == null) {
                        ps.setNull(i + 1, Types.VARCHAR);
                    } else if (a instanceof Double) {
                        double d = (Double) a;
                        if (d == Math.rint(d) && Math.abs(d) < 9.0e15) {
                            ps.setLong(i + 1, (long) d);
                        } else {
                            ps.setDouble(i + 1, d);
                        }
                    } else if (a instanceof Boolean) {
                        ps.setBoolean(i + 1, (Boolean) a);
                    } else if (str(a).startsWith("date:")) {
                        // A typed DATE parameter (java.sql.Date).
                        ps.setDate(i + 1, java.sql.Date.valueOf(str(a).substring(5)));
                    } else {
                        ps.setString(i + 1, str(a));
                    }
                }
                return ps.execute() ? read(ps.getResultSet()) : new LinkedHashMap<>();
            }
        }
        try (Statement s = conn.createStatement()) {
            return s.execute(sql) ? read(s.getResultSet()) : new LinkedHashMap<>();
        }
    }

    /**
     * SHOW WARNINGS on the connection, as [{level, code, message}]; a failure
     * is reported as one warning of level "Error" with code 0.
     */
    static List<Object> warnings(Connection conn) {
        List<Object> out = new ArrayList<>();
        try (Statement s = conn.createStatement(); ResultSet rs = s.executeQuery("SHOW WARNINGS")) {
            while (rs.next()) {
                Map<String, Object> w = new LinkedHashMap<>();
                w.put("level", rs.getString(1));
                w.put("code", rs.getInt(2));
                w.put("message", rs.getString(3));
                out.add(w);
            }
        } catch (SQLException e) {
            Map<String, Object> w = new LinkedHashMap<>();
            w.put("level", "Error");
            w.put("code", 0);
            w.put("message", "SHOW WARNINGS failed: " + e.getMessage());
            out.add(w);
        }
        return out;
    }

    static Map<String, Object> meta(DatabaseMetaData md, String m, List<Object> a) throws SQLException {
        switch (m) {
            case "getDatabaseInfo": {
                Map<String, Object> r = new LinkedHashMap<>();
                r.put("columns", List.of("product", "version", "driver", "driver_version", "catalog_term", "schema_term"));
                List<Object> row = new ArrayList<>();
                row.add(md.getDatabaseProductName());
                row.add(md.getDatabaseProductVersion());
                row.add(md.getDriverName());
                row.add(md.getDriverVersion());
                row.add(md.getCatalogTerm());
                row.add(md.getSchemaTerm());
                r.put("rows", List.of(row));
                return r;
            }
            case "getCatalogs":
                return read(md.getCatalogs());
            case "getSchemas":
                return read(a.isEmpty() ? md.getSchemas() : md.getSchemas(arg(a, 0), arg(a, 1)));
            case "getTableTypes":
                return read(md.getTableTypes());
            case "getTables": {
                String[] types = null;
                if (a.size() > 3 && a.get(3) != null) {
                    types = asList(a.get(3)).stream().map(DpsqlJdbc::str).toArray(String[]::new);
                }
                return read(md.getTables(arg(a, 0), arg(a, 1), arg(a, 2), types));
            }
            case "getColumns":
                return read(md.getColumns(arg(a, 0), arg(a, 1), arg(a, 2), arg(a, 3)));
            case "getPrimaryKeys":
                return read(md.getPrimaryKeys(arg(a, 0), arg(a, 1), arg(a, 2)));
            case "getIndexInfo":
                return read(md.getIndexInfo(arg(a, 0), arg(a, 1), arg(a, 2), false, true));
            case "getImportedKeys":
                return read(md.getImportedKeys(arg(a, 0), arg(a, 1), arg(a, 2)));
            default:
                throw new IllegalArgumentException("unknown DatabaseMetaData call " + m);
        }
    }

    static String arg(List<Object> a, int i) {
        return i < a.size() && a.get(i) != null ? str(a.get(i)) : null;
    }

    static Map<String, Object> read(ResultSet rs) throws SQLException {
        try (rs) {
            ResultSetMetaData md = rs.getMetaData();
            int n = md.getColumnCount();
            List<Object> cols = new ArrayList<>();
            List<Object> types = new ArrayList<>();
            for (int i = 1; i <= n; i++) {
                cols.add(md.getColumnLabel(i));
                types.add(md.getColumnTypeName(i));
            }
            List<Object> rows = new ArrayList<>();
            while (rs.next()) {
                List<Object> row = new ArrayList<>();
                for (int i = 1; i <= n; i++) {
                    row.add(rs.getString(i));
                }
                rows.add(row);
            }
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("columns", cols);
            r.put("types", types);
            r.put("rows", rows);
            return r;
        }
    }

    static Map<String, Object> error(SQLException e) {
        Map<String, Object> err = new LinkedHashMap<>();
        err.put("code", e.getErrorCode());
        err.put("state", e.getSQLState() == null ? "" : e.getSQLState());
        err.put("message", e.getMessage() == null ? e.toString() : e.getMessage());
        return err;
    }

    static String readAll(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        in.transferTo(b);
        return b.toString(StandardCharsets.UTF_8);
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> asMap(Object o) {
        return (Map<String, Object>) o;
    }

    @SuppressWarnings("unchecked")
    static List<Object> asList(Object o) {
        return (List<Object>) o;
    }

    static String str(Object o) {
        if (o == null) {
            return "";
        }
        if (o instanceof Double && (Double) o == Math.rint((Double) o)) {
            return Long.toString(((Double) o).longValue());
        }
        return o.toString();
    }

    static long num(Object o) {
        return ((Double) o).longValue();
    }

    /** A minimal JSON reader and writer (the JDK has none). */
    static final class Json {
        private final String s;
        private int i;

        Json(String s) {
            this.s = s;
        }

        Object value() {
            ws();
            if (i >= s.length()) {
                throw new IllegalArgumentException("JSON: unexpected end");
            }
            char c = s.charAt(i);
            switch (c) {
                case '{': {
                    i++;
                    Map<String, Object> m = new LinkedHashMap<>();
                    ws();
                    if (peek('}')) {
                        return m;
                    }
                    do {
                        ws();
                        String k = string();
                        ws();
                        expect(':');
                        m.put(k, value());
                        ws();
                    } while (peek(','));
                    expect('}');
                    return m;
                }
                case '[': {
                    i++;
                    List<Object> l = new ArrayList<>();
                    ws();
                    if (peek(']')) {
                        return l;
                    }
                    do {
                        l.add(value());
                        ws();
                    } while (peek(','));
                    expect(']');
                    return l;
                }
                case '"':
                    return string();
                case 't':
                    i += 4;
                    return Boolean.TRUE;
                case 'f':
                    i += 5;
                    return Boolean.FALSE;
                case 'n':
                    i += 4;
                    return null;
                default: {
                    int j = i;
                    while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
                        i++;
                    }
                    return Double.valueOf(s.substring(j, i));
                }
            }
        }

        private String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (true) {
                char c = s.charAt(i++);
                if (c == '"') {
                    return b.toString();
                }
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                char e = s.charAt(i++);
                switch (e) {
                    case 'n': b.append('\n'); break;
                    case 't': b.append('\t'); break;
                    case 'r': b.append('\r'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'u':
                        b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        i += 4;
                        break;
                    default: b.append(e);
                }
            }
        }

        private void ws() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
        }

        private boolean peek(char c) {
            if (i < s.length() && s.charAt(i) == c) {
                i++;
                return true;
            }
            return false;
        }

        private void expect(char c) {
            if (!peek(c)) {
                throw new IllegalArgumentException("JSON: expected " + c + " at " + i);
            }
        }

        static String write(Object o) {
            StringBuilder b = new StringBuilder();
            write(b, o);
            return b.toString();
        }

        @SuppressWarnings("unchecked")
        private static void write(StringBuilder b, Object o) {
            if (o == null) {
                b.append("null");
            } else if (o instanceof String) {
                b.append('"');
                for (char c : ((String) o).toCharArray()) {
                    switch (c) {
                        case '"': b.append("\\\""); break;
                        case '\\': b.append("\\\\"); break;
                        case '\n': b.append("\\n"); break;
                        case '\r': b.append("\\r"); break;
                        case '\t': b.append("\\t"); break;
                        default:
                            if (c < 0x20) {
                                b.append(String.format("\\u%04x", (int) c));
                            } else {
                                b.append(c);
                            }
                    }
                }
                b.append('"');
            } else if (o instanceof Number || o instanceof Boolean) {
                b.append(o);
            } else if (o instanceof Map) {
                b.append('{');
                boolean first = true;
                for (Map.Entry<String, Object> e : ((Map<String, Object>) o).entrySet()) {
                    if (!first) {
                        b.append(',');
                    }
                    first = false;
                    write(b, e.getKey());
                    b.append(':');
                    write(b, e.getValue());
                }
                b.append('}');
            } else if (o instanceof List) {
                b.append('[');
                boolean first = true;
                for (Object e : (List<Object>) o) {
                    if (!first) {
                        b.append(',');
                    }
                    first = false;
                    write(b, e);
                }
                b.append(']');
            } else {
                write(b, o.toString());
            }
        }
    }
}
