"""AutoGraph's source transformation: Python control flow -> calls to runtime helpers.

Passes over the function's AST, in order:
1. ``not``/``and``/``or``/``x if c else y`` become ``ag__.not_/and_/or_/if_exp`` (tensor-aware,
   lazy like Python) and
   calls go through ``ag__.call``, which converts the user functions they reach;
2. ``return`` inside control flow becomes ``_ag_retval``/``_ag_do_return`` assignments, with the
   statements after it guarded and loops stopped (a ``break``);
3. ``break``/``continue`` become flags that guard the rest of the loop body and stop the loop;
4. ``if``/``while``/``for`` become local functions over the variables the statement assigns,
   called through ``ag__.if_stmt/while_stmt/for_stmt``, which pick Python or graph control flow
   at run time (Python for Python values, tf.cond/tf.while_loop for symbolic tensors).
New nodes copy the line numbers of the statements they replace, so errors point at user lines.
"""

from __future__ import annotations

import ast
import itertools

RETVAL, DO_RETURN = "_ag_retval", "_ag_do_return"


def _name(id_: str, ctx=None) -> ast.Name:
    return ast.Name(id=id_, ctx=ctx or ast.Load())


def _ag(attr: str) -> ast.Attribute:
    return ast.Attribute(value=_name("ag__"), attr=attr, ctx=ast.Load())


def _call(func: ast.expr, *args: ast.expr) -> ast.Call:
    return ast.Call(func=func, args=list(args), keywords=[])


def _assign(target: str, value: ast.expr) -> ast.Assign:
    return ast.Assign(targets=[_name(target, ast.Store())], value=value)


def _not(expr: ast.expr) -> ast.Call:
    return _call(_ag("not_"), expr)


def _located(nodes: list, like: ast.AST) -> list:
    return [_relocate(n, like) for n in nodes]


def _walk_local(node: ast.AST):
    """ast.walk that does not enter nested functions, lambdas, classes or comprehensions."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
                          ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        stack.extend(ast.iter_child_nodes(n))


def assigned_names(stmts: list, excluded: set) -> list[str]:
    """Names bound by `stmts` (not inside nested scopes), in first-seen order."""
    seen: dict[str, None] = {}
    for stmt in stmts:
        nodes = [stmt] + list(_walk_local(stmt))
        for n in nodes:
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                seen.setdefault(n.id, None)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                seen.setdefault(n.name, None)
    return [n for n in seen if n not in excluded and n != "ag__"
            and not n.startswith(_GENERATED_FUNCTIONS)]


_GENERATED_FUNCTIONS = ("_ag_if_", "_ag_while_", "_ag_for_")


class _BoolOps(ast.NodeTransformer):
    def visit_UnaryOp(self, node: ast.UnaryOp):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(_not(node.operand), node)
        return node

    def visit_BoolOp(self, node: ast.BoolOp):
        self.generic_visit(node)
        fn = "and_" if isinstance(node.op, ast.And) else "or_"
        result = node.values[-1]
        for value in reversed(node.values[:-1]):
            result = _call(_ag(fn), _lambda(value), _lambda(result))
        return ast.copy_location(result, node)

    def visit_Lambda(self, node):
        return node


_PLAIN_CALLS = {"range", "print", "isinstance", "issubclass", "super", "int", "float",
                "bool", "str", "list", "tuple", "dict", "set", "zip", "enumerate", "getattr",
                "setattr", "hasattr", "type", "min", "max", "sum", "abs", "sorted", "any", "all",
                "iter", "next", "locals", "globals", "repr", "id", "callable", "map", "filter"}


class _Calls(ast.NodeTransformer):
    """``f(x)`` -> ``ag__.call(f, x)``: user functions called while tracing are converted too.

    Calls of builtins and of functions reached through a module (``tf.tanh``) stay as written.
    """

    def __init__(self, modules: set[str]):
        self.modules = modules | {"ag__"}

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Name) and func.id == "len":
            return ast.copy_location(
                ast.Call(func=_ag("len_"), args=node.args, keywords=node.keywords), node)
        if isinstance(func, ast.Name) and func.id in _PLAIN_CALLS:
            return node
        base = func
        while isinstance(base, ast.Attribute):
            base = base.value
        if base is not func and isinstance(base, ast.Name) and base.id in self.modules:
            return node
        call = ast.Call(func=_ag("call"), args=[func, *node.args], keywords=node.keywords)
        return ast.copy_location(call, node)

    def visit_IfExp(self, node: ast.IfExp):
        self.generic_visit(node)
        call = _call(_ag("if_exp"), node.test, _lambda(node.body), _lambda(node.orelse))
        return ast.copy_location(call, node)

    def visit_Lambda(self, node):
        return node


def _lambda(expr: ast.expr) -> ast.Lambda:
    return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                                         defaults=[]), body=expr)


def _contains(stmts: list, kinds: tuple) -> bool:
    return any(isinstance(n, kinds) for s in stmts for n in [s, *_walk_local(s)])


def _sets_flag(stmt: ast.stmt, flag: str) -> bool:
    """True for compound statements that may set `flag` (the lowered jump's own assignment,
    a simple statement, is followed only by code generated with it)."""
    if isinstance(stmt, (ast.Assign, ast.Expr)):
        return False
    return any(isinstance(n, ast.Name) and n.id == flag and isinstance(n.ctx, ast.Store)
               for n in [stmt, *_walk_local(stmt)])


def _guard_rest(stmts: list, flag: str) -> list:
    """After any statement that may set `flag`, run the rest only if the flag is not set."""
    out = []
    for i, stmt in enumerate(stmts):
        if isinstance(stmt, ast.If):
            stmt.body = _guard_rest(stmt.body, flag)
            stmt.orelse = _guard_rest(stmt.orelse, flag)
        out.append(stmt)
        rest = stmts[i + 1:]
        if rest and _sets_flag(stmt, flag):
            guard = ast.If(test=_not(_name(flag)), body=_guard_rest(rest, flag), orelse=[])
            out.append(_relocate(guard, rest[0]))
            break
    return out


class _Returns:
    """Lower `return` inside control flow to flag + value assignments."""

    def lower(self, stmts: list, in_loop: bool) -> list:
        out = []
        for stmt in stmts:
            if isinstance(stmt, ast.Return):
                value = stmt.value or ast.Constant(value=None)
                new = [_assign(DO_RETURN, ast.Constant(value=True)), _assign(RETVAL, value)]
                if in_loop:
                    new.append(ast.Break())
                out.extend(_located(new, stmt))
                continue
            if isinstance(stmt, ast.If):
                stmt.body = self.lower(stmt.body, in_loop)
                stmt.orelse = self.lower(stmt.orelse, in_loop)
            elif isinstance(stmt, (ast.For, ast.While)):
                stmt.body = self.lower(stmt.body, True)
            elif isinstance(stmt, ast.With):
                stmt.body = self.lower(stmt.body, in_loop)
            out.append(stmt)
        return _guard_rest(out, DO_RETURN)


def _needs_return_lowering(fn: ast.FunctionDef) -> bool:
    for stmt in fn.body:
        if isinstance(stmt, (ast.If, ast.For, ast.While, ast.With)) and _contains(
                [stmt], (ast.Return,)):
            return True
    return False


class _Loops:
    """Lower break/continue of one loop body (not of nested loops) to flags."""

    def replace(self, stmts: list, kind: type, flag: str) -> tuple[list, bool]:
        found = False
        out = []
        for stmt in stmts:
            if isinstance(stmt, kind):
                out.append(ast.copy_location(_assign(flag, ast.Constant(value=True)), stmt))
                found = True
                continue
            if isinstance(stmt, ast.If):
                stmt.body, a = self.replace(stmt.body, kind, flag)
                stmt.orelse, b = self.replace(stmt.orelse, kind, flag)
                found = found or a or b
            elif isinstance(stmt, ast.With):
                stmt.body, a = self.replace(stmt.body, kind, flag)
                found = found or a
            out.append(stmt)
        return out, found


class Converter:
    """Turns one FunctionDef into its AutoGraph form (in place) and says if anything changed."""

    def __init__(self, modules: set[str] | None = None):
        self.modules = modules or set()
        self.counter = itertools.count()
        self.changed = False
        self.excluded: set[str] = set()
        self.nonlocals: set[str] = set()

    def convert(self, fn: ast.FunctionDef) -> ast.FunctionDef:
        for n in _walk_local(fn):
            if isinstance(n, (ast.Global, ast.Nonlocal)):
                self.excluded.update(n.names)
            if isinstance(n, ast.Nonlocal):
                self.nonlocals.update(n.names)
        before = ast.dump(fn)
        fn.body = [_Calls(self.modules).visit(_BoolOps().visit(s)) for s in fn.body]
        if _needs_return_lowering(fn):
            first = fn.body[0]
            body = _Returns().lower(fn.body, in_loop=False)
            prologue = _located([_assign(DO_RETURN, ast.Constant(value=False)),
                                 _assign(RETVAL, _ag("UNDEFINED_RETURN"))], first)
            ret = ast.copy_location(ast.Return(value=_call(_ag("retval"), _name(RETVAL))),
                                    fn.body[-1])
            fn.body = prologue + body + [ret]
        fn.body = self.block(fn.body)
        self.changed = ast.dump(fn) != before
        return fn

    def block(self, stmts: list) -> list:
        out = []
        for stmt in stmts:
            if isinstance(stmt, ast.If):
                out.extend(self.if_(stmt))
            elif isinstance(stmt, ast.While) and not stmt.orelse:
                out.extend(self.while_(stmt))
            elif isinstance(stmt, ast.For) and not stmt.orelse:
                out.extend(self.for_(stmt))
            elif isinstance(stmt, (ast.With, ast.Try)):
                stmt.body = self.block(stmt.body)
                out.append(stmt)
            else:
                out.append(stmt)
        return out

    def _fn(self, name: str, params: list[str], body: list, returns: list[str]) -> ast.FunctionDef:
        ret = ast.Return(value=ast.Tuple(elts=[_name(n) for n in returns], ctx=ast.Load()))
        declared = [n for n in assigned_names(body, set()) if n in self.excluded]
        nonlocals = [n for n in declared if n in self.nonlocals]
        globals_ = [n for n in declared if n not in self.nonlocals]
        # `global`/`nonlocal x` of the user's function apply inside the generated ones too
        body = ([ast.Global(names=globals_)] if globals_ else []) + (
            [ast.Nonlocal(names=nonlocals)] if nonlocals else []) + body
        fn = ast.FunctionDef(
            name=name, args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params],
                                          kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=body + [ret], decorator_list=[], returns=None)
        if "type_params" in ast.FunctionDef._fields:
            fn.type_params = []
        return fn

    def _init(self, names: list[str]) -> ast.Tuple:
        return ast.Tuple(elts=[_call(_ag("ld"), _call(_name("locals")), ast.Constant(value=n))
                               for n in names], ctx=ast.Load())

    def _names(self, names: list[str]) -> ast.Tuple:
        return ast.Tuple(elts=[ast.Constant(value=n) for n in names], ctx=ast.Load())

    def _bind(self, names: list[str], call: ast.Call) -> ast.stmt:
        if not names:
            return ast.Expr(value=call)
        target = ast.Tuple(elts=[_name(n, ast.Store()) for n in names], ctx=ast.Store())
        return ast.Assign(targets=[target], value=call)

    def if_(self, stmt: ast.If) -> list:
        stmt.body, stmt.orelse = self.block(stmt.body), self.block(stmt.orelse)
        names = assigned_names(stmt.body + stmt.orelse, self.excluded)
        k = next(self.counter)
        true_fn = self._fn(f"_ag_if_true_{k}", names, stmt.body, names)
        false_fn = self._fn(f"_ag_if_false_{k}", names, stmt.orelse, names)
        call = _call(_ag("if_stmt"), stmt.test, _name(true_fn.name), _name(false_fn.name),
                     self._init(names), self._names(names))
        return [_relocate(true_fn, stmt), _relocate(false_fn, stmt),
                _relocate(self._bind(names, call), stmt)]

    def _lower_jumps(self, stmt, k: int) -> tuple[list, ast.expr | None]:
        """Replace this loop's break/continue with flags; return prologue and extra test."""
        loops = _Loops()
        brk, cont = f"_ag_break_{k}", f"_ag_continue_{k}"
        body, has_cont = loops.replace(stmt.body, ast.Continue, cont)
        if has_cont:
            body = [ast.copy_location(_assign(cont, ast.Constant(value=False)), stmt)] + \
                _guard_rest(body, cont)
        body, has_break = loops.replace(body, ast.Break, brk)
        prologue = []
        extra = None
        if has_break:
            body = _guard_rest(body, brk)
            prologue = [ast.copy_location(_assign(brk, ast.Constant(value=False)), stmt)]
            extra = _not(_name(brk))
        stmt.body = body
        return prologue, extra

    def while_(self, stmt: ast.While) -> list:
        k = next(self.counter)
        prologue, extra = self._lower_jumps(stmt, k)
        stmt.body = self.block(stmt.body)
        test = stmt.test
        if extra is not None:
            test = _call(_ag("and_"), _lambda(test), _lambda(extra))
        names = assigned_names(stmt.body, self.excluded)
        test_fn = self._fn(f"_ag_while_test_{k}", names, [], [])
        test_fn.body = [ast.Return(value=test)]
        body_fn = self._fn(f"_ag_while_body_{k}", names, stmt.body, names)
        call = _call(_ag("while_stmt"), _name(test_fn.name), _name(body_fn.name),
                     self._init(names), self._names(names))
        return [*(_located(prologue, stmt)), _relocate(test_fn, stmt), _relocate(body_fn, stmt),
                _relocate(self._bind(names, call), stmt)]

    def for_(self, stmt: ast.For) -> list:
        k = next(self.counter)
        prologue, extra = self._lower_jumps(stmt, k)
        item = f"_ag_item_{k}"
        unpack = ast.copy_location(ast.Assign(targets=[stmt.target], value=_name(item)), stmt)
        stmt.body = self.block([unpack] + stmt.body)
        names = assigned_names(stmt.body, self.excluded)
        body_fn = self._fn(f"_ag_for_body_{k}", [item] + names, stmt.body, names)
        if extra is not None:
            extra_fn = self._fn(f"_ag_for_test_{k}", names, [], [])
            extra_fn.body = [ast.Return(value=extra)]
            extra_ref: ast.expr = _name(extra_fn.name)
            defs = [_relocate(extra_fn, stmt)]
        else:
            extra_ref, defs = ast.Constant(value=None), []
        call = _call(_ag("for_stmt"), stmt.iter, extra_ref, _name(body_fn.name),
                     self._init(names), self._names(names))
        return [*(_located(prologue, stmt)), *defs, _relocate(body_fn, stmt),
                _relocate(self._bind(names, call), stmt)]


def _relocate(node: ast.AST, like: ast.AST) -> ast.AST:
    """Give generated nodes (not the user's own, which keep their lines) a location."""
    for n in ast.walk(node):
        if isinstance(n, (ast.stmt, ast.expr, ast.arg)) and not hasattr(n, "lineno"):
            ast.copy_location(n, like)
    return node
