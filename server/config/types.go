package config

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ColumnType is a validated SQL column type. Its String form is accepted by
// go-mysql-server's planbuilder.ParseColumnTypeString.
type ColumnType struct {
	// Name is the canonical upper-case type name (INT, not INTEGER).
	Name string
	// Args are the parenthesised numbers: length (CHAR, VARCHAR, BINARY,
	// VARBINARY), display width (integers), precision and scale (DECIMAL),
	// fractional-second digits (DATETIME, TIMESTAMP, TIME).
	Args     []int
	Unsigned bool
}

func (t ColumnType) String() string {
	var b strings.Builder
	b.WriteString(t.Name)
	if len(t.Args) > 0 {
		b.WriteByte('(')
		for i, a := range t.Args {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(a))
		}
		b.WriteByte(')')
	}
	if t.Unsigned {
		b.WriteString(" UNSIGNED")
	}
	return b.String()
}

// Integer, Float, Decimal, Text, Binary and Temporal classify the type.
func (t ColumnType) Integer() bool {
	return slices.Contains([]string{"TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT", "BOOLEAN", "YEAR"}, t.Name)
}
func (t ColumnType) Float() bool   { return t.Name == "FLOAT" || t.Name == "DOUBLE" }
func (t ColumnType) Decimal() bool { return t.Name == "DECIMAL" }
func (t ColumnType) Text() bool {
	return slices.Contains([]string{"CHAR", "VARCHAR", "TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT"}, t.Name)
}
func (t ColumnType) Binary() bool {
	return slices.Contains([]string{"BINARY", "VARBINARY", "TINYBLOB", "BLOB", "MEDIUMBLOB", "LONGBLOB"}, t.Name)
}
func (t ColumnType) Temporal() bool {
	return slices.Contains([]string{"DATE", "DATETIME", "TIMESTAMP", "TIME"}, t.Name)
}

// typeSpec says how many arguments a type takes and their ranges.
type typeSpec struct {
	minArgs, maxArgs int
	max              []int // upper bound per argument
	min              []int // lower bound per argument
	unsigned         bool
}

var typeSpecs = map[string]typeSpec{
	"TINYINT":   {0, 1, []int{255}, []int{1}, true},
	"SMALLINT":  {0, 1, []int{255}, []int{1}, true},
	"MEDIUMINT": {0, 1, []int{255}, []int{1}, true},
	"INT":       {0, 1, []int{255}, []int{1}, true},
	"BIGINT":    {0, 1, []int{255}, []int{1}, true},
	"BOOLEAN":   {0, 0, nil, nil, false},
	"FLOAT":     {0, 0, nil, nil, false},
	"DOUBLE":    {0, 0, nil, nil, false},
	"DECIMAL":   {0, 2, []int{65, 30}, []int{1, 0}, false},
	"CHAR":      {0, 1, []int{255}, []int{0}, false},
	"VARCHAR":   {1, 1, []int{65535}, []int{0}, false},
	"BINARY":    {0, 1, []int{255}, []int{0}, false},
	"VARBINARY": {1, 1, []int{65535}, []int{0}, false},
	"TINYTEXT":  {}, "TEXT": {}, "MEDIUMTEXT": {}, "LONGTEXT": {},
	"TINYBLOB": {}, "BLOB": {}, "MEDIUMBLOB": {}, "LONGBLOB": {},
	"DATE":      {},
	"DATETIME":  {0, 1, []int{6}, []int{0}, false},
	"TIMESTAMP": {0, 1, []int{6}, []int{0}, false},
	"TIME":      {0, 1, []int{6}, []int{0}, false},
	"YEAR":      {},
	"JSON":      {},
}

var typeAliases = map[string]string{
	"INTEGER": "INT", "BOOL": "BOOLEAN", "REAL": "DOUBLE", "DOUBLE PRECISION": "DOUBLE",
	"NUMERIC": "DECIMAL", "DEC": "DECIMAL", "CHARACTER": "CHAR", "CHARACTER VARYING": "VARCHAR",
}

var reType = regexp.MustCompile(`^(DOUBLE PRECISION|CHARACTER VARYING|[A-Z]+)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?(?:\s+(UNSIGNED))?$`)

// ParseColumnType parses and checks a column type such as VARCHAR(64),
// BIGINT UNSIGNED, DECIMAL(10,2), DATETIME(6) or TEXT. Character sets,
// collations, ENUM and SET are not accepted.
func ParseColumnType(s string) (ColumnType, error) {
	u := strings.Join(strings.Fields(strings.ToUpper(s)), " ")
	m := reType.FindStringSubmatch(u)
	if m == nil {
		return ColumnType{}, fmt.Errorf("type %q is not understood; write a MySQL type such as VARCHAR(64), BIGINT, DOUBLE, DECIMAL(10,2), TEXT, DATE or DATETIME", s)
	}
	name := m[1]
	if a, ok := typeAliases[name]; ok {
		name = a
	}
	spec, ok := typeSpecs[name]
	if !ok {
		return ColumnType{}, fmt.Errorf("unknown column type %q; use one of %s", s, typeList())
	}
	t := ColumnType{Name: name, Unsigned: m[4] != ""}
	for _, a := range m[2:4] {
		if a == "" {
			continue
		}
		n, err := strconv.Atoi(a)
		if err != nil {
			return ColumnType{}, fmt.Errorf("type %q: %v", s, err)
		}
		t.Args = append(t.Args, n)
	}
	switch {
	case len(t.Args) < spec.minArgs:
		return ColumnType{}, fmt.Errorf("type %q needs a length, for example %s(255)", s, name)
	case len(t.Args) > spec.maxArgs && spec.maxArgs == 0:
		return ColumnType{}, fmt.Errorf("type %q takes no arguments; write %s", s, name)
	case len(t.Args) > spec.maxArgs:
		return ColumnType{}, fmt.Errorf("type %q takes at most %d argument(s)", s, spec.maxArgs)
	}
	for i, a := range t.Args {
		if a < spec.min[i] || a > spec.max[i] {
			return ColumnType{}, fmt.Errorf("type %q: argument %d must be from %d to %d", s, i+1, spec.min[i], spec.max[i])
		}
	}
	if name == "DECIMAL" && len(t.Args) == 2 && t.Args[1] > t.Args[0] {
		return ColumnType{}, fmt.Errorf("type %q: the scale (%d) cannot exceed the precision (%d)", s, t.Args[1], t.Args[0])
	}
	if t.Unsigned && !spec.unsigned {
		return ColumnType{}, fmt.Errorf("type %q: only integer types can be UNSIGNED", s)
	}
	return t, nil
}

func typeList() string {
	names := make([]string, 0, len(typeSpecs))
	for n := range typeSpecs {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
