"""Run statements through pandas.read_sql over SQLAlchemy with PyMySQL.

Reads a request on standard input:
  {"host", "port", "user", "password", "database", "tls", "ca_file",
   "statements": [{"sql", "prepared", "args", "warnings"}]}
and prints {"connect_error": {...}} or {"results": [{"columns", "types",
"rows", "error": {"code", "state", "message"}, "warnings": [{"level", "code",
"message"}]}]} as JSON (warnings, from SHOW WARNINGS, when the statement asks
for them), one connection for all statements so that session settings carry
over.

Every statement goes through pandas.read_sql(sqlalchemy.text(sql), conn,
params=...), as a notebook user writes it. "?" parameters become SQLAlchemy
named binds; PyMySQL interpolates them client-side (it has no server-side
prepared statements). Values are rendered as pandas holds them: an integer
column with a NULL becomes float64 (so 2 prints as 2.0), DECIMAL stays
decimal.Decimal, DATETIME becomes a Timestamp.

Needs Debian's python3-pandas, python3-sqlalchemy and python3-pymysql, so it
is run with the system interpreter (/usr/bin/python3), not a pyenv one.
"""

import datetime
import decimal
import json
import math
import re
import ssl
import sys

import pandas as pd
import sqlalchemy as sa
from sqlalchemy import exc


def error(e):
    """MySQL code and message of a DBAPI error (PyMySQL drops the SQLSTATE)."""
    orig = getattr(e, "orig", None) or e
    args = getattr(orig, "args", ())
    if len(args) >= 2 and isinstance(args[0], int):
        return {"code": args[0], "message": str(args[1])}
    return {"code": 0, "message": "%s: %s" % (type(orig).__name__, orig)}


def render(v):
    if v is None or v is pd.NaT:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8", "replace")
    if isinstance(v, pd.Timestamp):
        return v.isoformat(sep=" ")
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat(sep=" ") if isinstance(v, datetime.datetime) else v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if hasattr(v, "item"):  # numpy scalars
        v = v.item()
    return str(v)


QUESTION = re.compile(r"""('(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*"|`[^`]*`)|\?""")


def named_binds(sql):
    """Replaces ? placeholders outside quotes with :p0, :p1, ..."""
    n = [0]

    def sub(m):
        if m.group(1):
            return m.group(1)
        n[0] += 1
        return ":p%d" % (n[0] - 1)

    return QUESTION.sub(sub, sql)


def run(conn, st):
    if st.get("meta"):
        return {"error": {"code": 0, "message": "pandas has no JDBC metadata call " + st["meta"]}}
    sql = st["sql"]
    params = None
    if st.get("prepared"):
        sql = named_binds(sql)
        params = {"p%d" % i: a for i, a in enumerate(st.get("args") or [])}
    try:
        df = pd.read_sql(sa.text(sql), conn, params=params)
    except exc.ResourceClosedError:
        return {}  # executed; the statement returns no rows (SET, USE, ...)
    except exc.DBAPIError as e:
        return {"error": error(e)}
    except exc.SQLAlchemyError as e:
        return {"error": {"code": 0, "message": "%s: %s" % (type(e).__name__, e)}}
    rows = [[render(v) for v in row] for row in df.itertuples(index=False, name=None)]
    return {"columns": [str(c) for c in df.columns], "types": [str(t) for t in df.dtypes], "rows": rows}


def warnings(conn):
    """SHOW WARNINGS on the connection, as [{level, code, message}]."""
    rows = conn.exec_driver_sql("SHOW WARNINGS").fetchall()
    return [{"level": render(r[0]), "code": int(r[1]), "message": render(r[2])} for r in rows]


def main():
    req = json.load(sys.stdin)
    connect_args = {"connect_timeout": 10, "charset": "utf8mb4"}
    if req.get("tls"):
        if req.get("ca_file"):
            ctx = ssl.create_default_context(cafile=req["ca_file"])
        else:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        connect_args["ssl"] = ctx
    url = sa.engine.URL.create(
        "mysql+pymysql",
        username=req["user"],
        password=req["password"],
        host=req["host"],
        port=req["port"],
        database=req.get("database") or None,
    )
    engine = sa.create_engine(url, connect_args=connect_args, poolclass=sa.pool.NullPool)
    try:
        conn = engine.connect()
    except exc.DBAPIError as e:
        print(json.dumps({"connect_error": error(e)}))
        return
    with conn:
        results = []
        for st in req["statements"]:
            r = run(conn, st)
            if st.get("warnings"):
                r["warnings"] = warnings(conn)
            results.append(r)
    print(json.dumps({"results": results}))


if __name__ == "__main__":
    main()
