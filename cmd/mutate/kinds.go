package main

import (
	"fmt"
	"go/ast"
	"go/token"
	"regexp"
	"strconv"
	"strings"
)

// The kinds of change, each a promise a test should hold:
//   - swap: a comparison turned round at its edge, && for ||;
//   - not: a negation dropped;
//   - error: an error return skipped (if err != nil { return ... } never taken);
//   - call: a call whose result is unused removed (a write, a wake-up, an unlock);
//   - number: a numeric constant off by one, or a thousand times itself (a limit, a budget);
//   - sql: an operator or predicate of a statement of sql/queries, in its generated copy.
const (
	kindSwap   = "swap"
	kindNot    = "not"
	kindError  = "error"
	kindCall   = "call"
	kindNumber = "number"
	kindSQL    = "sql"
)

// goMutants are the changes of one parsed Go file in code the tests ran (isCovered), and of
// its named constants, which no coverage block holds: a constant's mutant is tried against
// every test that ran the package (allTests).
func goMutants(fset *token.FileSet, name string, src []byte, file *ast.File, isCovered func(token.Pos) bool) []mutant {
	var out []mutant
	add := func(kind string, at token.Pos, old, repl string, all bool) {
		pos := fset.Position(at)
		m := mutant{file: name, kind: kind, offset: pos.Offset, old: old, new: repl, line: pos.Line, col: pos.Column, allTests: all}
		m.source = sourceLine(src, pos.Offset)
		out = append(out, m)
	}
	text := func(n ast.Node) string {
		return string(src[fset.Position(n.Pos()).Offset:fset.Position(n.End()).Offset])
	}
	inConst := map[*ast.BasicLit]bool{}
	ast.Inspect(file, func(n ast.Node) bool {
		switch e := n.(type) {
		case *ast.GenDecl:
			if e.Tok == token.CONST {
				for _, spec := range e.Specs {
					for _, v := range spec.(*ast.ValueSpec).Values {
						ast.Inspect(v, func(n ast.Node) bool {
							if lit, ok := n.(*ast.BasicLit); ok && isNumber(lit) {
								inConst[lit] = true
								for _, repl := range numberMutations(lit.Value) {
									add(kindNumber, lit.Pos(), lit.Value, repl, true)
								}
							}
							return true
						})
					}
				}
			}
		case *ast.BinaryExpr:
			if to, ok := swaps[e.Op]; ok && isCovered(e.OpPos) && !constantOperands(e) {
				add(kindSwap, e.OpPos, e.Op.String(), to.String(), false)
			}
			// a number compared or computed with in covered code: a limit, a step
			for _, side := range []ast.Expr{e.X, e.Y} {
				if lit, ok := side.(*ast.BasicLit); ok && isNumber(lit) && !inConst[lit] && isCovered(lit.Pos()) && !constantOperands(e) {
					for _, repl := range numberMutations(lit.Value) {
						add(kindNumber, lit.Pos(), lit.Value, repl, false)
					}
				}
			}
		case *ast.UnaryExpr:
			if e.Op == token.NOT && isCovered(e.OpPos) {
				add(kindNot, e.OpPos, "!", "", false)
			}
		case *ast.IfStmt:
			if isErrCheck(e) && isCovered(e.Cond.Pos()) {
				add(kindError, e.Cond.Pos(), "", "false && ", false)
			}
		case *ast.ExprStmt:
			if call, ok := e.X.(*ast.CallExpr); ok && isCovered(e.Pos()) && droppable(call) {
				add(kindCall, e.Pos(), text(e), "{}", false)
			}
		}
		return true
	})
	return out
}

func isNumber(lit *ast.BasicLit) bool { return lit.Kind == token.INT || lit.Kind == token.FLOAT }

// numberMutations are a number's changes: one more, and a thousand times (none for zero).
func numberMutations(v string) []string {
	if n, err := strconv.ParseInt(strings.ReplaceAll(v, "_", ""), 0, 64); err == nil {
		if n == 0 {
			return []string{"1"}
		}
		return []string{strconv.FormatInt(n+1, 10), strconv.FormatInt(n*1000, 10)}
	}
	if f, err := strconv.ParseFloat(strings.ReplaceAll(v, "_", ""), 64); err == nil && f != 0 {
		return []string{strconv.FormatFloat(f*1000, 'g', -1, 64)}
	}
	return nil
}

// isErrCheck is `if err != nil { ... return ... }` with no else: skipping it is a failure
// carried on as a success.
func isErrCheck(s *ast.IfStmt) bool {
	cond, ok := s.Cond.(*ast.BinaryExpr)
	if !ok || cond.Op != token.NEQ || s.Else != nil || s.Init != nil {
		return false
	}
	x, ok := cond.X.(*ast.Ident)
	y, isNil := cond.Y.(*ast.Ident)
	if !ok || !isNil || y.Name != "nil" || (x.Name != "err" && !strings.HasSuffix(x.Name, "Err")) {
		return false
	}
	for _, st := range s.Body.List {
		if _, ok := st.(*ast.ReturnStmt); ok {
			return true
		}
	}
	return false
}

// droppable is a call a test could notice missing: not a panic, a test helper, a log line or
// a deferred cleanup's own call, whose absence changes no promise.
func droppable(call *ast.CallExpr) bool {
	switch fn := call.Fun.(type) {
	case *ast.Ident:
		return fn.Name != "panic" && fn.Name != "close" && fn.Name != "print" && fn.Name != "println"
	case *ast.SelectorExpr:
		switch fn.Sel.Name {
		case "Helper", "Debug", "Info", "Warn", "Error", "Log", "Logf", "Printf", "Println", "Fprintf", "Fprintln", "End",
			"SetAttributes", "RecordError", "SetStatus", "AddEvent":
			return false
		}
		return true
	}
	return false
}

// sourceLine is the trimmed line of src that holds offset: a mutant's identity in the file of
// equivalent survivors, which line numbers would not keep once lines above it change.
func sourceLine(src []byte, offset int) string {
	start := strings.LastIndexByte(string(src[:offset]), '\n') + 1
	end := offset + strings.IndexByte(string(src[offset:]), '\n')
	if end < offset {
		end = len(src)
	}
	return strings.TrimSpace(string(src[start:end]))
}

// sqlSwaps are the SQL changes, each breaking a predicate at its edge: a comparison turned
// round, AND for OR, a NOT dropped, IS NULL for IS NOT NULL.
var sqlSwaps = []struct{ re, to string }{
	{` = `, ` <> `}, {` <> `, ` = `}, {` < `, ` >= `}, {` >= `, ` < `}, {` > `, ` <= `}, {` <= `, ` > `},
	{` AND `, ` OR `}, {` OR `, ` AND `}, {`NOT `, ``}, {` IS NULL`, ` IS NOT NULL`}, {` IS NOT NULL`, ` IS NULL`},
}

// predicateLine is a line of a statement that holds a predicate: where a comparison decides
// rows. An = of a SET list or a SELECT list assigns, and is left alone.
var predicateLine = regexp.MustCompile(`(?i)\b(WHERE|AND|OR|ON|WHEN|HAVING|FILTER|EXISTS|CASE|USING)\b`)

// sqlMutants are the changes of the statements of one generated file of gen/db whose names
// match only: each operator of a predicate line of the statement's text (not its comments),
// tried against the tests that ran the method that sends the statement.
func sqlMutants(fset *token.FileSet, name string, src []byte, file *ast.File, only *regexp.Regexp) []mutant {
	// the method that sends each statement's constant, whose body a test must have run
	sender := map[string]token.Pos{}
	for _, d := range file.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && id.Obj != nil && id.Obj.Kind == ast.Con {
				if _, seen := sender[id.Name]; !seen {
					sender[id.Name] = fn.Body.Lbrace + 1
				}
			}
			return true
		})
	}
	var out []mutant
	for _, d := range file.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			lit, ok := vs.Values[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING || len(vs.Names) != 1 {
				continue
			}
			query := strings.Fields(strings.TrimPrefix(lit.Value, "`-- name: "))
			if len(query) == 0 || !only.MatchString(query[0]) || sender[vs.Names[0].Name] == 0 {
				continue
			}
			cov := fset.Position(sender[vs.Names[0].Name])
			base := fset.Position(lit.Pos()).Offset
			for lineStart := 0; lineStart < len(lit.Value); {
				lineEnd := strings.IndexByte(lit.Value[lineStart:], '\n')
				if lineEnd < 0 {
					lineEnd = len(lit.Value)
				} else {
					lineEnd += lineStart
				}
				line := lit.Value[lineStart:lineEnd]
				if code, _, _ := strings.Cut(line, "--"); predicateLine.MatchString(code) && !strings.Contains(strings.ToUpper(code), " SET ") {
					for _, sw := range sqlSwaps {
						for at := 0; ; {
							i := strings.Index(code[at:], sw.re)
							if i < 0 {
								break
							}
							at += i
							if sw.re == `NOT ` && strings.HasSuffix(strings.ToUpper(code[:at]), "IS ") {
								at += len(sw.re) // IS NOT NULL has its own change
								continue
							}
							pos := fset.Position(lit.Pos() + token.Pos(lineStart+at))
							out = append(out, mutant{file: name, kind: kindSQL, offset: base + lineStart + at, old: sw.re, new: sw.to,
								line: pos.Line, col: pos.Column, covLine: cov.Line, covCol: cov.Column,
								source: fmt.Sprintf("%s: %s", query[0], strings.TrimSpace(code))})
							at += len(sw.re)
						}
					}
				}
				lineStart = lineEnd + 1
			}
		}
	}
	return out
}

// constantOperands is a comparison of two literals, which a swap turns into nothing a test
// could tell from a compile error.
func constantOperands(e *ast.BinaryExpr) bool {
	_, l := e.X.(*ast.BasicLit)
	_, r := e.Y.(*ast.BasicLit)
	return l && r
}
