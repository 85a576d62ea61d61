"""Tagged unions of specs that are registries: the one place that lists the models of a kind.

A :class:`SpecUnion` is the union of the spec classes of one kind (preference
models, profile-size models, observation samplers, recommenders, stress
sources), each told apart by one key of its TOML table (``model``, ``kind`` or
``type``). Its members' tags are read from their ``Literal`` annotations
(``model: Literal["ibp"]``), never from a hand-kept list, and it is used as a
pydantic annotation of the field that holds such a spec::

    PREFERENCE_MODELS = SpecUnion("model", UniformSpec, IBPSpec, LDASpec)
    PreferenceSpec = Annotated[PreferenceModelSpec, PREFERENCE_MODELS]

    class WorldSpec(Strict):
        preference: PreferenceSpec

so a type checker sees the kind's base class (whose methods every member
implements) and pydantic dispatches on the tag when the file is validated.

Decisions
---------
* **Dispatch at validation time.** The field's validator looks the tag up in
  the union's current members, so a member registered later
  (:meth:`SpecUnion.register`, e.g. a model defined in a test) is accepted by
  every schema that holds the union, with no schema rebuilt.
* **Errors as pydantic's discriminated unions give them**, without the tag in
  the key path: a known tag validates the member class directly
  (``world[0].preference.sigma: ...``); an unknown or missing tag, or a value
  that is not a table, is validated by a discriminated union of the current
  members, so the message is pydantic's own (``Input tag 'gaussian' found
  using 'model' does not match any of the expected tags: 'uniform', 'ibp',
  'lda'``).
* **A bare tag for a member without required keys** (``shorthand=True``: an
  observation's ``sampler = "popularity"``): a string is the table
  ``{ model = "popularity" }``, and such a member serialises back to the
  string when nothing else of it is dumped (its own serializer does so),
  so dumps, digests and preset files keep the string.
* **Order is the registration order**, fixed: calibration seeds index the
  preference models and samplers by it, so a new member is appended, never
  inserted.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import Annotated, Any, Generic, Literal, TypeVar, Union, cast, get_args, get_origin

from pydantic import BaseModel, Field, SerializationInfo, TypeAdapter
from pydantic_core import PydanticKnownError, core_schema

__all__ = ["SpecUnion", "TagOf", "literal_choices"]

S = TypeVar("S", bound=BaseModel)


def literal_choices(tags: tuple[str, ...]) -> str:
    """The choices as pydantic's ``Literal`` errors list them: ``'a', 'b' or 'c'``."""
    quoted = [repr(t) for t in tags]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


class SpecUnion(Generic[S]):
    """A registry of spec classes told apart by the value of ``key`` (a tagged union).

    Parameters
    ----------
    key : str
        The discriminating key of the members' tables (``"model"``, ``"kind"``, ``"type"``).
    *members : type
        The spec classes, in simrec's fixed order; each annotates ``key`` with
        a ``Literal`` of one string, its tag.
    shorthand : bool, default False
        Accept a bare tag string for the member's table with its defaults
        (anything else that is not a table is then refused as a ``Literal``
        of the tags would refuse it).

    Raises
    ------
    TypeError
        A member without a one-string ``Literal`` at ``key``, or a tag given twice.
    """

    def __init__(self, key: str, *members: type[S], shorthand: bool = False) -> None:
        self.key = key
        self.shorthand = shorthand
        self._by_tag: dict[str, type[S]] = {}
        self._adapters: dict[tuple[type[S], ...], TypeAdapter[Any]] = {}
        for cls in members:
            self.register(cls)

    # -- the registry --------------------------------------------------------------------------------------------
    def tag_of_class(self, cls: type[S]) -> str:
        """The tag of a spec class: the one string of its ``Literal`` annotation at :attr:`key`."""
        field = getattr(cls, "model_fields", {}).get(self.key)
        args = get_args(field.annotation) if field is not None and get_origin(field.annotation) is Literal else ()
        if len(args) != 1 or not isinstance(args[0], str):
            raise TypeError(f"{cls.__name__} must annotate `{self.key}` with a Literal of one string (its tag)")
        return args[0]

    def register(self, cls: type[S]) -> type[S]:
        """Append a member (usable as a class decorator); TypeError if its tag is taken."""
        tag = self.tag_of_class(cls)
        if tag in self._by_tag:
            raise TypeError(
                f"{self.key} {tag!r} is already {self._by_tag[tag].__name__}; {cls.__name__} cannot take it"
            )
        self._by_tag[tag] = cls
        return cls

    @contextmanager
    def extended(self, *classes: type[S]) -> Iterator[SpecUnion[S]]:
        """Register ``classes`` for the duration of a ``with`` block (e.g. a model defined in a test)."""
        before = dict(self._by_tag)
        try:
            for cls in classes:
                self.register(cls)
            yield self
        finally:
            self._by_tag = before

    @property
    def members(self) -> tuple[type[S], ...]:
        """The spec classes, in order."""
        return tuple(self._by_tag.values())

    @property
    def tags(self) -> tuple[str, ...]:
        """The tags, in order (simrec's fixed order: calibration seeds index it)."""
        return tuple(self._by_tag)

    @property
    def by_tag(self) -> Mapping[str, type[S]]:
        """Tag -> spec class (a read-only view that follows later registrations)."""
        return MappingProxyType(self._by_tag)

    def __getitem__(self, tag: str) -> type[S]:
        return self._by_tag[tag]

    def __contains__(self, tag: object) -> bool:
        return tag in self._by_tag

    def tag(self, spec: BaseModel) -> str:
        """The tag of a member instance."""
        return str(getattr(spec, self.key))

    def __repr__(self) -> str:
        return f"SpecUnion({self.key!r}: {', '.join(self.tags)})"

    # -- validation ----------------------------------------------------------------------------------------------
    def validate(self, value: Any) -> S:
        """The member spec of ``value`` (a table, a member instance, or with ``shorthand`` a tag)."""
        members = self.members
        if isinstance(value, members):
            return value
        if self.shorthand and not isinstance(value, dict):
            if isinstance(value, str) and value in self._by_tag:
                value = {self.key: value}
            else:
                raise PydanticKnownError("literal_error", {"expected": literal_choices(self.tags)})
        if isinstance(value, dict):
            cls = self._by_tag.get(str(value.get(self.key)))
            if cls is not None:
                return cls.model_validate(value)
        return self._adapter(members).validate_python(value)  # refused, with pydantic's message

    def _adapter(self, members: tuple[type[S], ...]) -> TypeAdapter[Any]:
        if members not in self._adapters:
            # the members are known at run time only: typing's special forms are used as values here
            union, annotated = cast(Any, Union), cast(Any, Annotated)
            self._adapters[members] = TypeAdapter(annotated[union[members], Field(discriminator=self.key)])
        return self._adapters[members]

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            self.validate,
            serialization=core_schema.plain_serializer_function_ser_schema(_dump_member, info_arg=True),
        )


def _dump_member(spec: BaseModel, info: SerializationInfo) -> Any:
    """A member as its own ``model_dump`` gives it, with the dump's settings."""
    return spec.model_dump(
        mode=info.mode,
        exclude_defaults=info.exclude_defaults,
        exclude_none=info.exclude_none,
        exclude_unset=info.exclude_unset,
        by_alias=bool(info.by_alias),
    )


class TagOf:
    """A string field holding one of a :class:`SpecUnion`'s tags (``Annotated[str, TagOf(PREFERENCE_MODELS)]``).

    Checked against the union's current tags, with the message a ``Literal``
    of them would give (``Input should be 'uniform', 'ibp' or 'lda'``).
    """

    def __init__(self, union: SpecUnion[Any]) -> None:
        self.union = union

    def validate(self, value: Any) -> str:
        if isinstance(value, str) and value in self.union:
            return value
        raise PydanticKnownError("literal_error", {"expected": literal_choices(self.union.tags)})

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(self.validate, serialization=core_schema.str_schema())
