"""Queries of a fixed shape, compiled by the ORM once and afterwards only bound to new values.

Building a QuerySet and compiling it to SQL costs far more CPU than running the SQL it makes: on
the benchmark's host a lookup of one row by two columns took ~350 µs through the ORM and ~45 µs
as the same SQL on a cursor (bench/FINDINGS.md). A turn's start makes a dozen such reads, so
that difference is most of what a start costs. A `Prepared` read is written as an ordinary
QuerySet with `Slot`s where the values go; the ORM compiles it once (for the database the
QuerySet reads from), and each run binds the values the way the ORM's lookups would (each
column's field prepares its value), executes on the ordinary Django cursor (so query logging,
`assertNumQueries` and execute wrappers see it), applies the same converters and builds the same
model instances, `select_related` included.

    SEAT = Prepared(lambda: Seat.objects.filter(user=Slot("user"), blog=Slot("blog"))[:1])
    seat = SEAT.first(user=user, blog=blog)

`.count(**values)` counts the rows such a QuerySet matches (`PreparedAggregate` takes any
aggregates, Slots in their own filters included: a user's usage by minute, hour and month in one
read), `.update(changes, **values)` does the same for an UPDATE of them (the lease a turn takes
and gives back, the turn's end), and `insert(obj)` for the INSERT of a new instance (the turn,
each message and part, each ledger row): what `save()` would write, with the SQL compiled once
per model. `insert_linked(parent, children, link)` inserts a new row and new rows that refer to
it, all or none (a message and its parts): on PostgreSQL in one statement, so one round trip.

Only what a plain model QuerySet yields is supported: no `values()`, annotations, `prefetch_related`
or `only()`; an update filters on its table's own columns. A Slot stands for one scalar value, never
None (not a list for `__in`; `= NULL` would match nothing, so filter on `__isnull`). The build is
checked when it is first compiled; anything else raises `TypeError` then, not later.
"""

from __future__ import annotations

import _thread
import operator
from asyncio import _get_running_loop
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.conf import settings
from django.db import connections, router, transaction
from django.db.backends.base.operations import BaseDatabaseOperations
from django.db.backends.sqlite3.base import FORMAT_QMARK_REGEX
from django.db.models import Count, Model, QuerySet, sql
from django.db.models.expressions import Expression
from django.db.models.fields import AutoFieldMixin, BooleanField, CharField, Field, IntegerField, TextField
from django.db.models.fields.json import JSONField
from django.db.models.fields.related import ForeignKey
from django.db.models.lookups import Lookup
from django.db.models.query import ModelIterable, get_related_populators
from django.db.models.sql.where import WhereNode


class Slot(Expression):
    """A value given when the read runs: `filter(user=Slot("user"))`, then `.rows(user=...)`.

    Compared with a column, the column's field prepares the value; inside an expression (an UPDATE's
    `F("total") + Slot("amount", output_field=DecimalField())`) its own `output_field` does, if any.
    """

    def __init__(self, name: str, output_field: Any = None) -> None:
        super().__init__(output_field=output_field)
        self.name = name

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        return "%s", [self]

    def __repr__(self) -> str:
        return f"Slot({self.name!r})"


# SQL, the driver's SQL, params (Slots in place), Slot fields, alias
_Statement = tuple[str, str, tuple[Any, ...], dict[str, Any], str]
_Converters = list[tuple[int, list[Callable[..., Any]], Any]]  # (column, converters, expression), as the ORM's


def _converters(compiler: Any, expressions: list[Any]) -> _Converters:
    return [(pos, convs, expression) for pos, (convs, expression) in compiler.get_converters(expressions).items()]


def convert(row: Any, converters: _Converters, connection: Any) -> Any:
    """`row` with each column converted as the ORM converts what it reads (a list when any is; see
    `columns` for a hand-written read)."""
    if not converters:
        return row
    row = list(row)
    for pos, convs, expression in converters:
        for convert in convs:
            row[pos] = convert(row[pos], expression, connection)
    return row


def _slots(params: Any, *nodes: Any) -> dict[str, Any]:
    """The Slots placed as the right-hand side of lookups in `nodes`, with their fields; checked
    against the Slots the compiled SQL holds."""
    fields: dict[str, Any] = {}
    for node in nodes:
        _slot_fields(node, fields)
    _check_slots(params, fields)
    return fields


@dataclass(frozen=True)
class _Compiled:
    sql: str
    driver_sql: str  # the same SQL in the driver's own placeholders (`_driver_sql`)
    params: tuple[Any, ...]  # constants, and Slots where the values go
    fields: dict[str, Any]  # slot name -> the field that prepares its value
    model: type[Model]
    init_list: list[str]
    model_slice: slice
    converters: _Converters
    populators: list[Any]


class Prepared:
    """A model QuerySet of fixed shape (`build()` returns it), compiled on first use."""

    def __init__(self, build: Callable[[], QuerySet]) -> None:
        self._build = build
        self._compiled: tuple[_Compiled, str] | None = None
        self._updates: dict[tuple[tuple[str, str | None], ...], _Statement] = {}
        self._count: PreparedAggregate | None = None

    def rows(self, **values: Any) -> list[Model]:
        compiled, alias = self._compile()
        connection = connections[alias]
        params = _bind(compiled.params, compiled.fields, values, connection)
        fetched = _execute(connection, compiled.sql, compiled.driver_sql, params, _ALL_ROWS)
        out = []
        for row in fetched:
            row = convert(row, compiled.converters, connection)
            obj = compiled.model.from_db(alias, compiled.init_list, row[compiled.model_slice])
            for populator in compiled.populators:
                populator.populate(row, obj)
            out.append(obj)
        return out

    def first(self, **values: Any) -> Model | None:
        """The first row, or None (give the build a `[:1]` when more could match)."""
        found = self.rows(**values)
        return found[0] if found else None

    def count(self, **values: Any) -> int:
        """How many rows the QuerySet matches, as `QuerySet.count()` would count them."""
        if self._count is None:
            self._count = PreparedAggregate(self._build, n=Count("*"))
        return int(self._count.get(**values)["n"])

    def update(self, changes: dict[str, Any], **values: Any) -> int:
        """UPDATE the rows the QuerySet matches, setting `changes` (field name: value), as
        `QuerySet.update(**changes)` would; returns the number of rows matched. A value may be an
        expression whose Slots are bound from `values` (`F("total") + Slot("amount")`). The SQL is
        compiled once per set of changed fields and expressions."""
        shape = tuple(sorted((name, repr(v) if _is_expression(v) else None) for name, v in changes.items()))
        compiled = self._updates.get(shape)
        if compiled is None:
            queryset = self._build()
            compiled = self._updates[shape] = _compile_update(queryset, changes)
        sql_text, driver_sql, params, fields, alias = compiled
        connection = connections[alias]
        values.update({_SET + name: value for name, value in changes.items() if not _is_expression(value)})
        bound = _bind(params, fields, values, connection)
        return _execute(connection, sql_text, driver_sql, bound, _ROWCOUNT, writes=True)

    def _compile(self) -> tuple[_Compiled, str]:
        if self._compiled is None:  # two greenlets compiling at once would make the same result
            queryset = self._build()
            self._compiled = (_compile(queryset, queryset.db), queryset.db)
        return self._compiled


def _compile(queryset: QuerySet, alias: str) -> _Compiled:
    if queryset._iterable_class is not ModelIterable or queryset._prefetch_related_lookups:
        raise TypeError("Prepared supports plain model QuerySets (no values(), no prefetch_related())")
    if queryset.query.annotation_select or queryset.query.deferred_loading[0]:
        raise TypeError("Prepared does not support annotations or deferred fields")
    compiler = queryset.query.get_compiler(using=alias)
    sql, params = compiler.as_sql()
    select, klass_info = compiler.select, compiler.klass_info
    start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
    return _Compiled(
        sql=sql,
        driver_sql=_driver_sql(sql, alias),
        params=tuple(params),
        fields=_slots(params, queryset.query.where),
        model=klass_info["model"],
        init_list=[column[0].target.attname for column in select[start:end]],
        model_slice=slice(start, end),
        converters=_converters(compiler, [expression for expression, _, _ in select]),
        populators=get_related_populators(klass_info, select, alias),
    )


_SET = "="  # the prefix of the Slots an UPDATE sets (filters' Slots are named by the caller)


class PreparedAggregate:
    """`QuerySet.aggregate(**aggregates)` of a fixed shape, compiled on first use; Slots may stand in
    the QuerySet's filters and in the aggregates' own (`Sum("tokens", filter=Q(at__gte=Slot("since")))`)."""

    def __init__(self, build: Callable[[], QuerySet], **aggregates: Any) -> None:
        self._build = build
        self._aggregates = aggregates
        self._compiled: tuple[_Statement, list[str], _Converters] | None = None

    def get(self, **values: Any) -> dict[str, Any]:
        """The aggregates' values, as `aggregate()` returns them (None over no rows, as SQL's SUM)."""
        if self._compiled is None:
            self._compiled = _compile_aggregate(self._build(), self._aggregates)
        (sql_text, driver_sql, params, fields, alias), names, converters = self._compiled
        connection = connections[alias]
        row = _execute(connection, sql_text, driver_sql, _bind(params, fields, values, connection), _ONE_ROW)
        return dict(zip(names, convert(row, converters, connection), strict=True))


def _compile_aggregate(queryset: QuerySet, aggregates: dict[str, Any]) -> tuple[_Statement, list[str], _Converters]:
    query = queryset.query.chain()
    if query.is_sliced or query.distinct or query.combinator or query.group_by or query.annotation_select:
        raise TypeError("Prepared aggregates plain filtered QuerySets (no slices, distinct, unions or annotations)")
    query.clear_ordering(force=True)
    query.clear_select_clause()
    for name, aggregate in aggregates.items():
        query.add_annotation(aggregate, alias=name, select=True)
    compiler = query.get_compiler(queryset.db)
    sql_text, params = compiler.as_sql()
    selected = list(query.annotation_select.values())
    return (
        (
            sql_text,
            _driver_sql(sql_text, queryset.db),
            tuple(params),
            _slots(params, query.where, *selected),
            queryset.db,
        ),
        list(query.annotation_select),
        _converters(compiler, selected),
    )


def _is_expression(value: Any) -> bool:
    return hasattr(value, "resolve_expression")


def _compile_update(queryset: QuerySet, changes: dict[str, Any]) -> _Statement:
    alias = router.db_for_write(queryset.model)
    query = queryset.query.chain(sql.UpdateQuery)
    query.add_update_values({name: v if _is_expression(v) else Slot(_SET + name) for name, v in changes.items()})
    query.clear_ordering(force=True)
    query.clear_select_clause()
    if query.related_updates or query.count_active_tables() > 1:
        raise TypeError("Prepared updates filter on the updated table's own columns only")
    sql_text, params = query.get_compiler(alias).as_sql()
    fields: dict[str, Any] = {}
    _slot_fields(query.where, fields)
    for field, _, value in query.values:
        if isinstance(value, Slot) and value.name.startswith(_SET):
            fields[value.name] = _Saved(field)
        else:
            _inner_slots(value, fields)
    _check_slots(params, fields)  # (not `_slots`: an UPDATE's own values are Slots outside lookups)
    return sql_text, _driver_sql(sql_text, alias), tuple(params), fields, alias


@dataclass(frozen=True)
class _Saved:
    """A column an UPDATE sets: its value is prepared as a save prepares it."""

    field: Any


@dataclass(frozen=True)
class _Inner:
    """A Slot inside an expression: its value is prepared by the Slot's own output field, if any."""

    field: Any


def _inner_slots(expression: Any, out: dict[str, Any]) -> None:
    if isinstance(expression, Slot):
        out[expression.name] = _Inner(expression._output_field_or_none)
    for child in getattr(expression, "get_source_expressions", list)():
        if child is not None:
            _inner_slots(child, out)


def _bind(params: tuple[Any, ...], fields: dict[str, Any], values: dict[str, Any], connection: Any) -> list[Any]:
    if values.keys() != fields.keys():
        missing, unknown = sorted(fields.keys() - values.keys()), sorted(values.keys() - fields.keys())
        raise TypeError(f"values do not match the Slots: missing {missing}, unknown {unknown}")
    prepared = {}
    for name, field in fields.items():
        value = values[name]
        if isinstance(value, Model):
            value = value.pk
        if type(value) is _plain(field, connection):  # its preparation would return it as it is
            prepared[name] = value
        elif isinstance(field, _Saved):
            prepared[name] = field.field.get_db_prep_save(value, connection=connection)
        elif isinstance(field, _Inner):
            prepared[name] = value if field.field is None else field.field.get_db_prep_value(value, connection)
        elif value is None:  # `= NULL` matches nothing: the ORM would have written IS NULL
            raise TypeError(f"{name}: None in a filter; filter on __isnull instead")
        else:
            prepared[name] = field.get_db_prep_value(value, connection, prepared=False)
    return [prepared[p.name] if isinstance(p, Slot) else p for p in params]


def _check_slots(params: Any, fields: dict[str, Any]) -> None:
    named = {p.name for p in params if isinstance(p, Slot)}
    if named != set(fields):
        raise TypeError(
            f"Slots must be the right-hand side of a filter: found {sorted(named)}, placed {sorted(fields)}"
        )


def _slot_fields(node: Any, out: dict[str, Any]) -> None:
    """Each Slot that is the right-hand side of a lookup in `node` (a where clause or an expression,
    such as an aggregate's filter), with the field its value is compared with."""
    if isinstance(node, Lookup):
        if isinstance(node.rhs, Slot):
            out[node.rhs.name] = node.lhs.output_field
        return
    if isinstance(node, WhereNode):
        children = node.children
    else:
        children = node.get_source_expressions() if hasattr(node, "get_source_expressions") else []
    for child in children:
        if child is not None:
            _slot_fields(child, out)


@dataclass(frozen=True)
class _Insert:
    sql: str
    driver_sql: str
    fields: list[Any]  # the columns given, in order
    returning: list[Any]  # the columns the database returns (the auto id)
    converters: _Converters
    steps: tuple[tuple[Any, str, bool, frozenset[type]], ...]  # per field: itself, attname, own pre_save?, `_unchanged`


_inserts: dict[tuple[type[Model], bool, str], _Insert] = {}


def insert(*objs: Model) -> None:
    """INSERT new instances of one model as `save()` of each (or `bulk_create`) would: one statement.

    Each field's `pre_save` fills what it fills on a save (`auto_now_add`), each value is prepared
    for the database by its field, and the id the database assigns is set on the instance, which
    is then marked as saved to its database. The SQL of a one-row insert is compiled once per model
    (several rows go through `bulk_create`, whose SQL differs by backend and row count). Unlike
    `save()`, no `pre_save`/`post_save` signals are sent: use it for models nothing listens to.
    """
    model = type(objs[0])
    if any(type(obj) is not model for obj in objs):
        raise TypeError("insert() takes instances of one model")
    if len(objs) > 1:
        model._base_manager.bulk_create(objs)
        return
    (obj,) = objs
    meta = model._meta
    if meta.parents or meta.order_with_respect_to:
        raise TypeError("insert() does not handle inherited or ordered-with-respect-to models")
    alias = obj._state.db or router.db_for_write(model, instance=obj)
    connection = connections[alias]
    key = (model, obj.pk is not None, alias)
    compiled = _inserts.get(key)
    if compiled is None:
        compiled = _inserts[key] = _compile_insert(obj, alias)
    obj._prepare_related_fields_for_save(operation_name="save")  # an unsaved related object: refused, as save() does
    params = _params(obj, compiled, connection)

    def returned(cursor: Any) -> Any:  # the columns the database filled in (the id), as the ORM reads them
        return connection.ops.fetch_returned_insert_columns(cursor, ()) if compiled.returning else ()

    row = _execute(connection, compiled.sql, compiled.driver_sql, params, returned, writes=True)
    _saved(obj, compiled.returning, row, compiled.converters, connection, alias)


def _params(obj: Model, compiled: _Insert, connection: Any, skip: Any = None) -> list[Any]:
    """What `save()` would write for each of `compiled.fields` of `obj` (but `skip`)."""
    params = []
    for field, attname, own_pre_save, unchanged in compiled.steps:
        if field is skip:
            continue
        value = field.pre_save(obj, True) if own_pre_save else getattr(obj, attname)
        if type(value) in unchanged:  # what its preparation would return
            params.append(value)
            continue
        if _is_expression(value):
            raise TypeError(f"insert() takes plain values; {field.name} is an expression")
        params.append(field.get_db_prep_save(value, connection=connection))
    return params


def _saved(obj: Model, returning: list[Any], row: Any, converters: _Converters, connection: Any, alias: str) -> None:
    """Set on `obj` what the database returned for it (its id), and mark it saved to `alias`."""
    for field, value in zip(returning, convert(row, converters, connection), strict=True):
        setattr(obj, field.attname, value)
    obj._state.adding = False
    obj._state.db = alias


def insert_linked(parent: Model, children: list[Model], link: str, also: tuple[Model, ...] = ()) -> None:
    """INSERT a new `parent` and new `children` that refer to it by their foreign key `link`, and
    other new rows `also` (a model call's ledger row, with the message that answers it): all of
    them or none.

    On PostgreSQL one statement does it: the parent's INSERT, one per child and one per other row
    as data-modifying CTEs, each child's taking the parent's new id from the first. One round trip
    instead of four or more (BEGIN, the INSERTs, COMMIT), and atomic by itself. Elsewhere, `insert`
    of each in one transaction. As `insert`, no signals; the ids are set on the instances.
    """
    if not children and not also:
        insert(parent)
        return
    model = type(children[0]) if children else None
    field = model._meta.get_field(link) if model else None
    if model and (any(type(c) is not model for c in children) or field.remote_field.model is not type(parent)):
        raise TypeError(f"insert_linked() takes children of one model whose {link!r} refers to the parent's")
    if model and any(f.is_relation and f is not field for f in model._meta.concrete_fields):
        # (the one statement could not refuse an unsaved object behind another relation, as save() does)
        raise TypeError(f"insert_linked() takes children whose one relation is {link!r}")
    alias = parent._state.db or router.db_for_write(type(parent), instance=parent)
    connection = connections[alias]
    if connection.vendor != "postgresql" or parent.pk is not None:
        with transaction.atomic(using=alias):
            insert(parent)
            if children:
                insert(*children)  # (each takes the id its parent was just given, as a save would)
            for row in also:
                insert(row)
        return
    shape = tuple((type(row), row.pk is not None) for row in also)
    key = (type(parent), model, link, len(children), shape, alias)
    linked = _linked.get(key)
    if linked is None:
        linked = _linked[key] = _compile_linked(parent, children, field, also, alias)
    parent_insert, child_insert, also_inserts, sql_text = linked
    parent._prepare_related_fields_for_save(operation_name="save")
    for row in also:
        row._prepare_related_fields_for_save(operation_name="save")  # an unsaved related object: refused
    params = _params(parent, parent_insert, connection)
    for child in children:
        params += _params(child, child_insert, connection, skip=field)
    for row, row_insert in zip(also, also_inserts, strict=True):
        params += _params(row, row_insert, connection)

    row = _execute(connection, sql_text, sql_text, params, _ONE_ROW, writes=True)
    at = len(parent_insert.returning)
    _saved(parent, parent_insert.returning, row[:at], parent_insert.converters, connection, alias)
    for child in children:
        setattr(child, field.name, parent)  # its link and its cached parent, as a save would set them
        width = len(child_insert.returning)
        _saved(child, child_insert.returning, row[at : at + width], child_insert.converters, connection, alias)
        at += width
    for other, other_insert in zip(also, also_inserts, strict=True):
        width = len(other_insert.returning)
        _saved(other, other_insert.returning, row[at : at + width], other_insert.converters, connection, alias)
        at += width


_linked: dict[tuple[Any, ...], tuple[_Insert, _Insert | None, list[_Insert], str]] = {}


def _compile_linked(
    parent: Model, children: list[Model], field: Any, also: tuple[Model, ...], alias: str
) -> tuple[_Insert, _Insert | None, list[_Insert], str]:
    """`WITH p AS (INSERT parent ... RETURNING id), c1 AS (INSERT INTO child (link, ...) SELECT p.id,
    %s, ... FROM p RETURNING id), ..., a1 AS (INSERT other ... RETURNING id), ... SELECT (SELECT id
    FROM p), (SELECT id FROM c1), ..., (SELECT id FROM a1), ...`. The children's values are written
    in a SELECT, where PostgreSQL gives each the type of the column it goes into, as in a VALUES list.
    PostgreSQL runs every data-modifying CTE once, to completion, whether or not it is read."""
    connection = connections[alias]
    qn = connection.ops.quote_name
    parent_insert = _compile_insert(parent, alias)
    child_insert = _compile_insert(children[0], alias) if children else None
    also_inserts = [_compile_insert(row, alias) for row in also]
    if child_insert and (field not in child_insert.fields or field.target_field not in parent_insert.returning):
        raise TypeError("insert_linked() needs the child's link in its INSERT and the parent's id returned")
    every = parent_insert.fields + (child_insert.fields if child_insert else [])
    for f in every + [f for other in also_inserts for f in other.fields]:
        if hasattr(f, "get_placeholder"):  # a column written other than as a plain %s
            raise TypeError(f"insert_linked() writes plain values; {f.name} has its own placeholder")
    returned = ", ".join(qn(f.column) for f in parent_insert.returning)
    ctes = [f'"p" AS ({parent_insert.sql.rsplit(" RETURNING ", 1)[0]} RETURNING {returned})']
    picks = [f'(SELECT {qn(f.column)} FROM "p")' for f in parent_insert.returning]
    if child_insert:
        if len(child_insert.returning) != len(parent_insert.returning):
            raise TypeError("insert_linked() needs the parent and the children to return as many columns")
        columns = [qn(field.column)] + [qn(f.column) for f in child_insert.fields if f is not field]
        values = [f'"p".{qn(field.target_field.column)}'] + ["%s"] * (len(columns) - 1)
        child_returned = ", ".join(qn(f.column) for f in child_insert.returning)
        table = qn(children[0]._meta.db_table)
        for i in range(1, len(children) + 1):
            ctes.append(
                f'"c{i}" AS (INSERT INTO {table} ({", ".join(columns)}) SELECT {", ".join(values)} FROM "p"'
                f" RETURNING {child_returned})"
            )
            picks += [f'(SELECT {qn(f.column)} FROM "c{i}")' for f in child_insert.returning]
    for i, other in enumerate(also_inserts, start=1):
        ctes.append(f'"a{i}" AS ({other.sql})')  # (its own INSERT ... RETURNING, as `insert` runs it)
        picks += [f'(SELECT {qn(f.column)} FROM "a{i}")' for f in other.returning]
    picks = picks or ["1"]  # (nothing returns an id: the statement still returns its one row)
    return parent_insert, child_insert, also_inserts, f"WITH {', '.join(ctes)} SELECT {', '.join(picks)}"


def _compile_insert(obj: Model, alias: str) -> _Insert:
    meta = obj._meta
    pk_set = obj.pk is not None
    fields = [f for f in meta.local_concrete_fields if not f.generated and (pk_set or f is not meta.auto_field)]
    returning = list(meta.db_returning_fields)
    if returning and not connections[alias].features.can_return_columns_from_insert:
        raise TypeError("insert() needs a database that returns the ids it assigns (SQLite >= 3.35, PostgreSQL)")
    query = sql.InsertQuery(type(obj))
    query.insert_values(fields, [obj])
    compiler = query.get_compiler(using=alias)
    compiler.returning_fields = returning
    statements = compiler.as_sql()
    if len(statements) != 1:
        raise TypeError("insert() makes one statement; this database would need several")
    return _Insert(
        sql=statements[0][0],
        driver_sql=_driver_sql(statements[0][0], alias),
        fields=fields,
        returning=returning,
        converters=_converters(compiler, [f.get_col(meta.db_table) for f in returning]),
        steps=tuple(
            (f, f.attname, type(f).pre_save is not Field.pre_save, _unchanged(f, connections[alias])) for f in fields
        ),
    )


_plains: dict[tuple[int, type], tuple[Any, type | None]] = {}


def _plain(field: Any, connection: Any) -> type | None:
    """The one type of value that `field` prepares for `connection` (to save it, or to compare a
    column with it) by returning it unchanged, so its preparation can be skipped for a value of
    exactly that type: `str` for a text column, `int` for an integer one or a reference to an
    integer id, `bool` for a boolean; None for any other field (dates, decimals, JSON, UUIDs...).

    Decided by which methods the field's class prepares with, so a field class (or a database's
    operations) that prepares its own way is never skipped; tests hold that the skipped preparation
    returns each such value unchanged (tests/agent/test_prepared.py)."""
    if isinstance(field, (_Saved, _Inner)):  # (the column an UPDATE sets; a Slot's output field)
        field = field.field
        if field is None:
            return None
    key = (id(field), type(connection.ops))
    known = _plains.get(key)
    if known is None or known[0] is not field:  # (kept with the field, so its id names no other)
        known = _plains[key] = (field, _plain_type(field, connection))
    return known[1]


def _unchanged(field: Any, connection: Any) -> frozenset[type]:
    """The types of value that saving prepares for `connection` by returning them as they are: the
    `_plain` type, and None where the field's class writes None as NULL itself (a reference, JSON)
    or its preparation passes None through (the plain ones)."""
    plain = _plain(field, connection)
    cls = type(field)
    none = plain is not None or _defined_by(cls, "get_db_prep_save") in ([ForeignKey, Field], [JSONField, Field])
    return frozenset(t for t in (plain, type(None) if none else None) if t is not None)


def _plain_type(field: Any, connection: Any) -> type | None:
    cls = type(field)
    if isinstance(field, ForeignKey):
        # A reference prepares as the field it refers to; "" and None become NULL, neither an int.
        if _defined_by(cls, "get_db_prep_save") != [ForeignKey, Field]:
            return None
        target = _plain(field.target_field, connection)
        return int if target is int else None
    if _defined_by(cls, "get_db_prep_save") != [Field]:
        return None
    prep, db_prep = _defined_by(cls, "get_prep_value"), _defined_by(cls, "get_db_prep_value")
    to_python = _defined_by(cls, "to_python")[:1]
    if (
        prep in ([CharField, Field], [TextField, Field])
        and to_python in ([CharField], [TextField])
        and db_prep == [Field]
    ):
        return str  # (to_python returns a str as it is)
    ops = type(connection.ops)
    if (
        prep == [IntegerField, Field]
        and ops.adapt_integerfield_value is BaseDatabaseOperations.adapt_integerfield_value
    ):
        if db_prep == [IntegerField, Field]:
            return int
        if (
            db_prep == [AutoFieldMixin, IntegerField, Field]
            and ops.validate_autopk_value is BaseDatabaseOperations.validate_autopk_value
        ):
            return int
    if prep == [BooleanField, Field] and to_python == [BooleanField] and db_prep == [Field]:
        return bool  # (to_python returns True and False as they are)
    return None


def _defined_by(cls: type, name: str) -> list[type]:
    """The classes along `cls`'s MRO that define `name` themselves, nearest first."""
    return [c for c in cls.__mro__ if name in c.__dict__]


def _driver_sql(sql_text: str, alias: str) -> str:
    """`sql_text` as the driver takes it: Django writes `%s` placeholders, which SQLite's driver
    reads as `?` (Django's SQLite cursor converts every statement it runs, by a regular expression)."""
    if connections[alias].vendor == "sqlite":
        return FORMAT_QMARK_REGEX.sub("?", sql_text).replace("%%", "%")
    return sql_text


def _execute(
    connection: Any,
    sql_text: str,
    driver_sql: str,
    params: list[Any],
    read: Callable[[Any], Any],
    *,
    writes: bool = False,
) -> Any:
    """Run one statement and return what `read(cursor)` reads of it.

    On Django's cursor while the connection's queries are watched (DEBUG's query log,
    `assertNumQueries`, `CaptureQueriesContext`, execute wrappers) or inside a running event loop
    (where Django refuses, as it should). Otherwise on the driver's own cursor, after the same checks
    Django's cursor makes (thread sharing, the health check, opening the connection), with the
    driver's errors, executing or reading, raised as Django's (`IntegrityError`, ...). A failed
    write (`writes`) inside an atomic block marks it for rollback, as Django's own writes do.
    """
    try:
        if connection.force_debug_cursor or settings.DEBUG or connection.execute_wrappers or _get_running_loop():
            with connection.cursor() as cursor:
                cursor.execute(sql_text, params)
                return read(cursor)
        # Django's own checks, each called only when its cheap precondition says it has work (the thread
        # check takes a lock to read the sharing count; ensure_connection goes through async_unsafe).
        if connection._thread_ident != _thread.get_ident():
            connection.validate_thread_sharing()
        if connection.health_check_enabled and not connection.health_check_done:
            connection.close_if_health_check_failed()
        if connection.connection is None:
            connection.ensure_connection()
        with connection.wrap_database_errors:
            cursor = connection.connection.cursor() if connection.vendor == "sqlite" else connection.create_cursor()
            try:
                cursor.execute(driver_sql, params)
                return read(cursor)
            finally:
                cursor.close()
    except Exception as exc:
        if writes and connection.in_atomic_block:  # as `transaction.mark_for_rollback_on_error` does
            connection.needs_rollback = True
            connection.rollback_exc = exc
        raise


_ALL_ROWS = operator.methodcaller("fetchall")
_ONE_ROW = operator.methodcaller("fetchone")
_ROWCOUNT = operator.attrgetter("rowcount")


class Columns(NamedTuple):
    """All of a model's columns as the ORM selects them, for a hand-written read (`Written`)."""

    sql: str  # the select list: `"table"."column", ...`
    attnames: list[str]  # each column's attribute name, in order
    converters: _Converters  # what the ORM applies to each value it reads (JSON decoding, ...)


def columns(model: type[Model], alias: str) -> Columns:
    """The select list the ORM writes for every column of `model`, qualified by its table's name,
    with the converters the ORM applies to what it reads from them."""
    compiler = model._base_manager.using(alias).all().query.get_compiler(using=alias)
    compiler.setup_query()
    select = compiler.select
    return Columns(
        ", ".join(sql for _, (sql, _params), _ in select),
        [expression.target.attname for expression, _, _ in select],
        _converters(compiler, [expression for expression, _, _ in select]),
    )


class Written:
    """A read the ORM cannot write (a LEFT JOIN from the parent, say), written once in SQL with `%s`
    placeholders by `build(alias)` and run like a `Prepared` read: on the driver's cursor while
    nobody watches, counted and logged like any query while someone does.

    `build` returns the SQL and what the read needs besides (`Columns`, for instance); `rows(*params)`
    returns the rows and that. The params are given as the database takes them (prepare them first).
    """

    def __init__(self, build: Callable[[str], tuple[str, Any]], alias: str = "default") -> None:
        self._build = build
        self._alias = alias
        self._built: tuple[str, str, Any] | None = None

    def rows(self, *params: Any) -> tuple[list[Any], Any]:
        if self._built is None:
            sql_text, extra = self._build(self._alias)
            self._built = (sql_text, _driver_sql(sql_text, self._alias), extra)
        sql_text, driver_sql, extra = self._built
        return _execute(connections[self._alias], sql_text, driver_sql, list(params), _ALL_ROWS), extra

    @property
    def alias(self) -> str:
        return self._alias

    def connection(self) -> Any:
        return connections[self._alias]


_layouts: dict[type[Model], tuple[tuple[str, str, Any], ...]] = {}


def new(model: type[Model], **values: Any) -> Model:
    """`model(**values)`, made the way Django makes a loaded instance: every column given in order,
    which skips sorting keywords from columns and setting each relation through its descriptor.
    A relation may be given by its field's name (`session=...`: its id is taken, and the object
    cached on the instance, as `model(session=...)` caches it) or by its column (`session_id`);
    a column not given takes its default. pre_init and post_init are sent, as by `model(...)`."""
    layout = _layouts.get(model)
    if layout is None:
        layout = _layouts[model] = tuple((f.attname, f.name, f) for f in model._meta.concrete_fields)
    args, related = [], []
    for attname, name, field in layout:
        if attname in values:
            args.append(values.pop(attname))
        elif name in values and name != attname:
            obj = values.pop(name)
            args.append(None if obj is None else getattr(obj, field.target_field.attname))
            if obj is not None:
                related.append((field, obj))
        else:
            args.append(field.get_default())
    if values:
        raise TypeError(f"{model.__name__} has no field {sorted(values)[0]!r}")
    instance = model(*args)
    for field, obj in related:
        field.set_cached_value(instance, obj)
    return instance
