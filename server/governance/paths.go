package governance

import (
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// serverPathVariables are the system variables whose MySQL meaning is a
// file or directory on the server. An analyst reads them as NULL
// (secure_file_priv: file import and export are disabled for them, which
// is true) or as ” (the others): where the server keeps its ledger, its
// data files and its keys is not the analyst's to know, and a path names
// the server's accounts and layout. Any other variable whose value is an
// absolute path is hidden as well (hiddenValue).
var serverPathVariables = map[string]bool{
	"secure_file_priv": true, "datadir": true, "basedir": true, "plugin_dir": true, "tmpdir": true,
	"general_log_file": true, "slow_query_log_file": true, "log_error": true, "pid_file": true, "socket": true,
	"character_sets_dir": true, "lc_messages_dir": true, "init_file": true, "ft_stopword_file": true,
	"caching_sha2_password_private_key_path": true, "caching_sha2_password_public_key_path": true,
	"sha256_password_private_key_path": true, "sha256_password_public_key_path": true,
	"ssl_ca": true, "ssl_capath": true, "ssl_cert": true, "ssl_key": true, "ssl_crl": true, "ssl_crlpath": true,
	"innodb_data_home_dir": true, "innodb_log_group_home_dir": true, "innodb_undo_directory": true,
	"innodb_tmpdir": true, "log_bin_basename": true, "log_bin_index": true, "relay_log": true,
	"relay_log_basename": true, "relay_log_index": true, "mecab_rc_file": true, "keyring_file_data": true,
	"replica_load_tmpdir": true, "slave_load_tmpdir": true,
}

// windowsPath matches an absolute Windows path (C:\…, C:/…, \\host\…).
var windowsPath = regexp.MustCompile(`^([A-Za-z]:[\\/]|\\\\)`)

// hiddenValue returns what an analyst reads for the variable name of value
// v, and whether it differs from v: NULL for secure_file_priv, ” for the
// other server paths and for any value that is an absolute path.
func hiddenValue(name string, v any) (any, bool) {
	name = strings.ToLower(name)
	s, isString := v.(string)
	absolute := isString && (filepath.IsAbs(s) || strings.HasPrefix(s, "/") || windowsPath.MatchString(s))
	if !serverPathVariables[name] && !absolute {
		return v, false
	}
	if name == "secure_file_priv" {
		return nil, v != nil
	}
	if v == nil || s == "" {
		return v, false
	}
	return "", true
}

// hidePaths replaces, in an analyst's plan, every system variable that
// holds a server path by its hidden value (a literal: its value now is its
// value for the whole statement), subqueries included, and SHOW VARIABLES
// by a listing with the hidden values.
func hidePaths(ctx *sql.Context, n sql.Node) (sql.Node, transform.TreeIdentity, error) {
	n, same, err := transform.NodeWithOpaque(n, func(node sql.Node) (sql.Node, transform.TreeIdentity, error) {
		if sv, ok := node.(*plan.ShowVariables); ok {
			return &hiddenShowVariables{ShowVariables: sv}, transform.NewTree, nil
		}
		return node, transform.SameTree, nil
	})
	if err != nil {
		return nil, transform.SameTree, err
	}
	n, same2, err := transform.NodeExprsWithOpaque(n, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		switch e := e.(type) {
		case *expression.SystemVar:
			v, err := e.Eval(ctx, nil)
			if err != nil {
				return e, transform.SameTree, nil // the statement reports it
			}
			if h, hidden := hiddenValue(e.Name, v); hidden {
				return expression.NewLiteral(h, e.Type()), transform.NewTree, nil
			}
		case *plan.Subquery:
			q, same, err := hidePaths(ctx, e.Query)
			if err != nil || same {
				return e, transform.SameTree, err
			}
			return e.WithQuery(q), transform.NewTree, nil
		}
		return e, transform.SameTree, nil
	})
	if err != nil {
		return nil, transform.SameTree, err
	}
	return n, same && same2, nil
}

// hiddenShowVariables is SHOW [GLOBAL|SESSION] VARIABLES for an analyst:
// go-mysql-server's listing (the session's or the global values, the
// filter of LIKE or WHERE on the name), with server paths hidden.
type hiddenShowVariables struct{ *plan.ShowVariables }

var _ sql.ExecSourceRel = (*hiddenShowVariables)(nil)

func (h *hiddenShowVariables) String() string {
	return h.ShowVariables.String() + " (server paths hidden)"
}

// WithChildren implements sql.Node.
func (h *hiddenShowVariables) WithChildren(children ...sql.Node) (sql.Node, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(h, len(children), 0)
	}
	return h, nil
}

// WithExpressions implements sql.Expressioner (the filter).
func (h *hiddenShowVariables) WithExpressions(exprs ...sql.Expression) (sql.Node, error) {
	n, err := h.ShowVariables.WithExpressions(exprs...)
	if err != nil {
		return nil, err
	}
	return &hiddenShowVariables{ShowVariables: n.(*plan.ShowVariables)}, nil
}

// RowIter implements sql.ExecSourceRel, as go-mysql-server's
// buildShowVariables with hiddenValue applied.
func (h *hiddenShowVariables) RowIter(ctx *sql.Context, _ sql.Row) (sql.RowIter, error) {
	vars := ctx.GetAllSessionVariables()
	if h.Global {
		vars = sql.SystemVariables.GetAllGlobalVariables()
	}
	filter, err := h.filter()
	if err != nil {
		return nil, err
	}
	var rows []sql.Row
	for k, v := range vars {
		v, _ = hiddenValue(k, v)
		if filter != nil {
			res, err := filter.Eval(ctx, sql.Row{strings.ToLower(k), v})
			if err != nil {
				return nil, err
			}
			if res, _, err = types.Boolean.Convert(ctx, res); err != nil || res.(int8) == 0 {
				continue
			}
		}
		rows = append(rows, sql.NewRow(k, v))
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i][0].(string) < rows[j][0].(string) })
	return sql.RowsToRowIter(rows...), nil
}

// filter returns the LIKE or WHERE filter over the row (name, value): the
// node replaces go-mysql-server's before the analyzer fixes the filter's
// column indexes (it does so for its own node only), so its columns are
// found here by name.
func (h *hiddenShowVariables) filter() (sql.Expression, error) {
	if h.Filter == nil {
		return nil, nil
	}
	f, _, err := transform.Expr(h.Filter, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		gf, ok := e.(*expression.GetField)
		if !ok {
			return e, transform.SameTree, nil
		}
		i := 0
		if strings.EqualFold(gf.Name(), plan.ShowVariablesValueCol) {
			i = 1
		}
		return gf.WithIndex(i), transform.NewTree, nil
	})
	return f, err
}
