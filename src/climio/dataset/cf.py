"""CF conventions as climio reads them (pure: attributes in, names out).

    axis_of(dim, attrs)          the CF role of one dimension from its coordinate variable's attributes
    roles_of(dims, coords)       {dim: role} for a variable, with the fallback for unlabelled dimensions
    auxiliary_names(variables)   bounds, coordinate and other auxiliary variables (not data)
    data_variable(variables)     the default variable: the only multi-dimensional one that is data

Roles are the axis letters t (time), z (vertical), y (latitude / y), x (longitude / x); a dimension
no evidence names (an ensemble member, a realization) has role None. Evidence, strongest first:
the `axis` attribute, `standard_name`, units (degrees_east/north, `<unit> since <date>`, pressure
units or `positive`), then the dimension's name (lon, lat, lev, time, ...).

Fallback when nothing labels a dimension (e.g. dims d0..d3 of a bare array): the last two
dimensions are y, x and the first is t when the variable has three or more dimensions; the
vertical role goes to the dimension just before y for four or more dimensions. A role another
dimension claims by evidence is never given by the fallback.
"""

import re

from climio.base.errors import InputError

AXES = "xyzt"
ROLE_NAMES = {"t": "time", "z": "vertical", "y": "latitude/y", "x": "longitude/x"}

_STD_NAMES = {
    "x": {"longitude", "projection_x_coordinate", "grid_longitude"},
    "y": {"latitude", "projection_y_coordinate", "grid_latitude"},
    "t": {"time"},
    "z": {"air_pressure", "height", "depth", "altitude", "model_level_number"},
}
_X_UNITS = {"degrees_east", "degree_east", "degree_e", "degrees_e", "degreee", "degreese"}
_Y_UNITS = {"degrees_north", "degree_north", "degree_n", "degrees_n", "degreen", "degreesn"}
_P_UNITS = {"pa", "hpa", "kpa", "mpa", "pascal", "pascals", "mbar", "millibar", "millibars", "mb",
            "bar", "bars", "dbar", "decibar", "decibars", "atm"}
_COMMON = {"x": {"lon", "longitude", "x", "rlon"}, "y": {"lat", "latitude", "y", "rlat"},
           "z": {"lev", "level", "depth", "z", "plev", "height"}, "t": {"time", "t"}}

# attributes whose values name other variables that describe, not hold, the data (CF 1.11 s. 7, 5)
_NAMING_ATTRS = ("bounds", "coordinates", "ancillary_variables", "grid_mapping", "climatology")


def attr(attrs: dict, key: str) -> str:
    """An attribute as stripped text ('' when absent); bytes decoded."""
    v = (attrs or {}).get(key)
    if v is None:
        return ""
    if isinstance(v, bytes):
        v = v.decode("utf-8", "replace")
    return str(v).strip()


def axis_of(dim: str, attrs) -> tuple:
    """(letter, rank) for one dimension, rank = which CF evidence said so (lower is stronger):
    0 the axis attribute, 1 standard_name, 2 units or `positive`, 3 the name alone; (None, 9)."""
    attrs = attrs or {}
    axis = attr(attrs, "axis").lower()
    if len(axis) == 1 and axis in AXES:
        return axis, 0
    std = attr(attrs, "standard_name").lower()
    for letter, names in _STD_NAMES.items():
        if std in names:
            return letter, 1
    # CF parametric vertical coordinates: atmosphere_sigma_coordinate, ocean_s_coordinate_g1, ...
    if "_coordinate" in std and std.startswith(("atmosphere_", "ocean_")):
        return "z", 1
    low = attr(attrs, "units").lower()
    if low in _X_UNITS:
        return "x", 2
    if low in _Y_UNITS:
        return "y", 2
    if re.match(r"^\s*\w+\s+since\s+\S", low):
        return "t", 2
    if low in _P_UNITS or attr(attrs, "positive").lower() in ("up", "down"):
        return "z", 2
    for letter, names in _COMMON.items():
        if str(dim).lower() in names:
            return letter, 3
    return None, 9


def roles_of(dims, coords=None) -> tuple:
    """The role (t, z, y, x or None) of each of `dims`, in order. `coords`: {dim: attributes of its
    coordinate variable} (missing: no coordinate variable). A letter claimed by two dimensions goes
    to the stronger evidence, then to the first; unlabelled dimensions get the fallback above."""
    coords = coords or {}
    best = {}
    for i, dim in enumerate(dims):
        letter, rank = axis_of(dim, coords.get(dim))
        if letter and (letter not in best or rank < best[letter][1]):
            best[letter] = (i, rank)
    roles = [None] * len(dims)
    for letter, (i, _) in best.items():
        roles[i] = letter
    n = len(dims)
    fallback = {}
    if n >= 2:
        fallback.update({n - 1: "x", n - 2: "y"})
    if n >= 3:
        fallback[0] = "t"
    if n >= 4:
        fallback[n - 3] = "z"
    for i, letter in fallback.items():
        if roles[i] is None and letter not in best:
            roles[i] = letter
    return tuple(roles)


def _named(text: str) -> list:
    """Variable names in an attribute value: `coordinates` and `ancillary_variables` are blank
    separated; `cell_measures` is `area: cell_area volume: vol`; `grid_mapping` may be `crs: x y`."""
    return [w for w in text.replace(",", " ").split() if not w.endswith(":")]


def auxiliary_names(variables: dict) -> set:
    """Names of the variables that describe others: coordinate variables (1-D, named like their
    dimension), bounds (named by a `bounds` attribute, or ending _bnds / _bounds), and variables
    named in any variable's coordinates, ancillary_variables, cell_measures, grid_mapping or
    climatology. `variables`: {name: (dims, attrs)}."""
    aux = set()
    for name, (dims, attrs) in variables.items():
        if tuple(dims) == (name,):
            aux.add(name)
        if name.endswith(("_bnds", "_bounds")):
            aux.add(name)
        for key in _NAMING_ATTRS:
            aux.update(_named(attr(attrs, key)))
        measures = attr(attrs, "cell_measures")
        if measures:
            aux.update(w for w in measures.split() if not w.endswith(":"))
    return aux & set(variables)


def data_variable(variables: dict, where: str) -> str:
    """The default variable of a dataset: the only multi-dimensional variable that is not
    auxiliary (auxiliary_names); InputError naming the candidates otherwise. `variables`:
    {name: (dims, attrs)}; `where` names the dataset in the message."""
    aux = auxiliary_names(variables)
    cands = [k for k, (dims, _) in variables.items() if len(dims) >= 2 and k not in aux]
    if len(cands) == 1:
        return cands[0]
    if not cands:
        raise InputError(f"say which variable with --var: {where} has no multi-dimensional data variable "
                         f"(variables: {', '.join(variables) or 'none'})")
    raise InputError(f"say which variable with --var: {where} has {', '.join(cands)}")
