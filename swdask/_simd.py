"""Explicit SIMD lanes for numba kernels: ``Lanes`` is an LLVM vector of 32 ``int16`` lanes,
``Dwords`` one of 16 ``int32`` lanes (the memory, arithmetic and mask operations take either,
by the arrays' element type: a kernel written once runs in both widths), ``Bytes`` one of 64
unsigned bytes (its own operations, below).

numba has no vector type, and leaving the lane loops to LLVM's auto-vectoriser proved
fragile: the same kernel vectorised for 32 and 64 lanes but not at all for 16, and where it
did, it re-checked array aliasing on every query row and kept the carried vectors in memory
(docs/notes/cpu-kernels.md has the figures). These few intrinsics give the kernels a vector
value that lives in registers; LLVM lowers ``<32 x i16>`` for whatever the host CPU has (one
zmm register with AVX-512BW, two ymm with AVX2, four xmm with SSE2), so the kernels stay
portable. The table lookups per lane (:func:`permute`, :func:`permute64`,
:func:`permute_bytes`) are x86-specific: ``vpermw``/``vpermi2w``/``vpermb`` where the host has
AVX-512 (BW, VBMI), else ``vpshufb`` on 16-byte pieces of the table where it has AVX2 (see
:func:`_lookup_pshufb`), else portable IR that LLVM scalarises (a stack round trip per lane);
only where numba compiles for the host.

Conventions: arrays passed to ``load``/``store`` are 1-D and C-contiguous; ``offset`` counts
elements (not bytes) and is not bounds-checked. Arithmetic wraps like C integers; the
kernels that use it guarantee (or detect) that no lane overflows. Lane masks are plain
integers: bit ``l`` is lane ``l``.
"""
from __future__ import annotations

from llvmlite import binding as llvm_binding
from llvmlite import ir
from numba import types
from numba.core import config
from numba.extending import intrinsic, models, register_model

#: Lanes per vector (one 512-bit register of int16).
LANES = 32

_I16 = ir.IntType(16)
_VEC = ir.VectorType(_I16, LANES)
#: Byte lanes per vector (one 512-bit register; the byte lanes' section below).
BYTE_LANES = 64
_I8 = ir.IntType(8)
_BVEC = ir.VectorType(_I8, BYTE_LANES)
_MASK_INT = ir.IntType(LANES)


def _host_feature(name: str) -> bool:
    """True when numba compiles for this host and the host has CPU feature ``name``."""
    if config.CPU_NAME not in (None, "", "host"):
        return False  # compiling for a named/generic CPU: stay portable
    if config.CPU_FEATURES and f"+{name}" not in config.CPU_FEATURES:
        return False
    try:
        return bool(llvm_binding.get_host_cpu_features().get(name, False))
    except RuntimeError:  # pragma: no cover - llvmlite cannot read the features
        return False


HAVE_VPERMW = _host_feature("avx512bw")
#: ``vpshufb`` on 256-bit registers (AVX2): the table lookups where there is no AVX-512.
HAVE_PSHUFB = _host_feature("avx2")


def _lookup_pshufb(builder, table_bytes, positions):
    """``result[k] = table_bytes[positions[k]]`` for ``<64 x i8>`` byte positions into a table
    of 16 x C bytes (``positions`` below 16 x C), with AVX2's ``vpshufb``, which looks up 16
    bytes by the low 4 bits of each index within each 128-bit half and gives 0 where an
    index has bit 7 set. Each 16-byte piece ``c`` of the table, broadcast to both halves,
    is looked up by the positions whose high bits name it (the others marked 0x80), and the
    pieces' results are ORed: 2 C ``vpshufb`` per 64 lanes instead of 64 scalar round trips
    through the stack (measured in docs/notes/cpu-kernels.md). Written by hand: LLVM does
    not lower a shufflevector with variable indices to ``vpshufb``."""
    pieces = table_bytes.type.count // 16
    half = ir.VectorType(_I8, 32)
    low_nibble = builder.and_(positions, ir.Constant(_BVEC, [15] * 64))
    piece_of = builder.lshr(positions, ir.Constant(_BVEC, [4] * 64))
    zeroed = ir.Constant(_BVEC, [0x80] * 64)
    result = None
    for piece in range(pieces):
        broadcast = builder.shuffle_vector(
            table_bytes, ir.Constant(table_bytes.type, ir.Undefined),
            ir.Constant(ir.VectorType(ir.IntType(32), 32),
                        [16 * piece + k for k in range(16)] * 2))
        chosen = builder.icmp_unsigned("==", piece_of, ir.Constant(_BVEC, [piece] * 64))
        index = builder.select(chosen, low_nibble, zeroed)
        looked = []
        for first in (0, 32):
            index_half = builder.shuffle_vector(
                index, ir.Constant(_BVEC, ir.Undefined),
                ir.Constant(ir.VectorType(ir.IntType(32), 32), list(range(first, first + 32))))
            looked.append(_call_intrinsic(builder, "llvm.x86.avx2.pshuf.b", half,
                                          [broadcast, index_half]))
        both = builder.shuffle_vector(looked[0], looked[1], ir.Constant(
            ir.VectorType(ir.IntType(32), 64), list(range(64))))
        result = both if result is None else builder.or_(result, both)
    return result


def _word_positions(builder, index, entries: int):
    """The ``<64 x i8>`` byte positions of int16 entries ``index & (entries - 1)`` of a table
    (little-endian: entry e is bytes 2e, 2e + 1)."""
    entry = builder.and_(index, ir.Constant(_VEC, [entries - 1] * LANES))
    low = builder.mul(entry, ir.Constant(_VEC, [2] * LANES))
    pair = builder.or_(low, builder.shl(builder.add(low, ir.Constant(_VEC, [1] * LANES)),
                                        ir.Constant(_VEC, [8] * LANES)))
    return builder.bitcast(pair, _BVEC)


_GATHER_NAME = "llvm.masked.gather.v32i32.v32p0"


class LanesType(types.Type):
    """numba type of a ``<32 x i16>`` vector value."""

    def __init__(self):
        super().__init__(name="Lanes_i16x32")


Lanes = LanesType()


@register_model(LanesType)
class _LanesModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _VEC)


#: int32 lanes per vector (one 512-bit register): the striped row's widest lanes, for scores
#: past 16 bits.
DWORD_LANES = 16
_DVEC = ir.VectorType(ir.IntType(32), DWORD_LANES)


class DwordsType(types.Type):
    """numba type of a ``<16 x i32>`` vector value."""

    def __init__(self):
        super().__init__(name="Dwords_i32x16")


Dwords = DwordsType()


@register_model(DwordsType)
class _DwordsModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _DVEC)


#: The signed lane kinds the arithmetic, masks and memory operations below take (int16 or
#: int32 lanes alike), by numba type and by array element type.
_VECTOR_OF = {Lanes: _VEC, Dwords: _DVEC}
_KIND_OF = {types.int16: Lanes, types.int32: Dwords}


def _kind_of_array(array):
    """The lane kind of an int16 or int32 array, else None."""
    if isinstance(array, types.Array):
        return _KIND_OF.get(array.dtype)
    return None


def _intrinsic_name(name: str, vector) -> str:
    """``llvm.<name>.v<count>i<width>`` for an LLVM vector type."""
    return f"llvm.{name}.v{vector.count}i{vector.element.width}"


def _element_pointer(context, builder, array_type, array, offset, element_type):
    data = context.make_array(array_type)(context, builder, array).data
    pointer = builder.gep(data, [offset])
    return builder.bitcast(pointer, ir.PointerType(element_type))


def _splat_value(builder, scalar, vector_type=_VEC):
    element = vector_type.element
    if scalar.type.width > element.width:
        scalar = builder.trunc(scalar, element)
    elif scalar.type.width < element.width:
        scalar = builder.sext(scalar, element)
    vector = builder.insert_element(ir.Constant(vector_type, ir.Undefined), scalar,
                                    ir.Constant(ir.IntType(32), 0))
    zeros = ir.Constant(ir.VectorType(ir.IntType(32), vector_type.count),
                        [0] * vector_type.count)
    return builder.shuffle_vector(vector, ir.Constant(vector_type, ir.Undefined), zeros)


def _call_intrinsic(builder, name, return_type, args):
    module = builder.module
    function_type = ir.FunctionType(return_type, [a.type for a in args])
    function = module.globals.get(name)
    if function is None:
        function = ir.Function(module, function_type, name=name)
    return builder.call(function, args)


# ----------------------------------------------------------------------------- memory


@intrinsic
def load(typingctx, array, offset):
    """``array[offset:offset+32]`` (int16) as lanes; ``array[offset:offset+16]`` of an int32
    array as int32 lanes."""
    kind = _kind_of_array(array)
    if kind is None:
        return None
    sig = kind(array, offset)

    def codegen(context, builder, sig, args):
        vector_type = _VECTOR_OF[sig.return_type]
        pointer = _element_pointer(context, builder, sig.args[0], args[0], args[1], vector_type)
        return builder.load(pointer, align=vector_type.element.width // 8)

    return sig, codegen


@intrinsic
def load_codes(typingctx, array, offset):
    """``array[offset:offset+32]`` (uint8 residue codes) zero-extended to int16 lanes."""
    if not (isinstance(array, types.Array) and array.dtype == types.uint8):
        return None
    sig = Lanes(array, offset)

    def codegen(context, builder, sig, args):
        byte_vector = ir.VectorType(ir.IntType(8), LANES)
        pointer = _element_pointer(context, builder, sig.args[0], args[0], args[1], byte_vector)
        return builder.zext(builder.load(pointer, align=1), _VEC)

    return sig, codegen


@intrinsic
def store(typingctx, array, offset, value):
    """``array[offset:offset+32] = value`` (int16; int32 lanes into an int32 array)."""
    kind = _kind_of_array(array)
    if kind is None or value is not kind:
        return None
    sig = types.void(array, offset, value)

    def codegen(context, builder, sig, args):
        vector_type = _VECTOR_OF[sig.args[2]]
        pointer = _element_pointer(context, builder, sig.args[0], args[0], args[1], vector_type)
        builder.store(args[2], pointer, align=vector_type.element.width // 8)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def splat(typingctx, scalar):
    """All lanes equal to ``scalar`` (truncated to int16)."""
    if not isinstance(scalar, types.Integer):
        return None
    sig = Lanes(scalar)

    def codegen(context, builder, sig, args):
        return _splat_value(builder, args[0])

    return sig, codegen


@intrinsic
def splat_of(typingctx, array, scalar):
    """All lanes equal to ``scalar``, lanes of ``array``'s type (int16 or int32): what a
    kernel written once for both widths splats with."""
    kind = _kind_of_array(array)
    if kind is None or not isinstance(scalar, types.Integer):
        return None
    sig = kind(array, scalar)

    def codegen(context, builder, sig, args):
        return _splat_value(builder, args[1], _VECTOR_OF[sig.return_type])

    return sig, codegen


# ----------------------------------------------------------------------------- arithmetic


def _binary(build):
    """A lane-wise operation on two vectors of one kind (int16 or int32 lanes); ``build``
    gets the builder, both values and their LLVM vector type."""
    @intrinsic
    def operation(typingctx, a, b):
        if a not in _VECTOR_OF or b is not a:
            return None
        sig = a(a, b)

        def codegen(context, builder, sig, args):
            return build(builder, args[0], args[1], _VECTOR_OF[sig.return_type])

        return sig, codegen

    return operation


add = _binary(lambda b, x, y, v: b.add(x, y))
add.__doc__ = "Lane-wise ``x + y`` (wrapping)."
sub = _binary(lambda b, x, y, v: b.sub(x, y))
sub.__doc__ = "Lane-wise ``x - y`` (wrapping)."
maximum = _binary(lambda b, x, y, v: _call_intrinsic(b, _intrinsic_name("smax", v), v, [x, y]))
maximum.__doc__ = "Lane-wise signed maximum."
add_where_positive = _binary(
    lambda b, x, y, v: b.select(b.icmp_signed(">", x, ir.Constant(v, [0] * v.count)),
                                b.add(x, y), ir.Constant(v, [0] * v.count)))
add_where_positive.__doc__ = "Lane-wise ``x + y`` where ``x > 0``, else 0."
sub_floor0 = _binary(
    lambda b, x, y, v: _call_intrinsic(b, _intrinsic_name("usub.sat", v), v, [x, y]))
sub_floor0.__doc__ = ("Lane-wise ``max(x - y, 0)`` for non-negative ``x, y`` "
                      "(unsigned saturating subtraction: one instruction).")


@intrinsic
def permute(typingctx, table, index):
    """``result[l] = table[index[l] & 31]``: a 32-entry table lookup in every lane."""
    if table is not Lanes or index is not Lanes:
        return None
    sig = Lanes(table, index)

    def codegen(context, builder, sig, args):
        table_value, index_value = args
        if HAVE_VPERMW:
            return _call_intrinsic(builder, "llvm.x86.avx512.permvar.hi.512", _VEC,
                                   [table_value, index_value])
        if HAVE_PSHUFB:
            return builder.bitcast(_lookup_pshufb(
                builder, builder.bitcast(table_value, _BVEC),
                _word_positions(builder, index_value, LANES)), _VEC)
        result = ir.Constant(_VEC, ir.Undefined)
        mask = ir.Constant(_I16, LANES - 1)
        for lane in range(LANES):
            position = ir.Constant(ir.IntType(32), lane)
            entry = builder.and_(builder.extract_element(index_value, position), mask)
            result = builder.insert_element(
                result, builder.extract_element(table_value, entry), position)
        return result

    return sig, codegen


@intrinsic
def permute64(typingctx, table_low, table_high, index):
    """``result[l] = (table_low ++ table_high)[index[l] & 63]``: a 64-entry table lookup."""
    if table_low is not Lanes or table_high is not Lanes or index is not Lanes:
        return None
    sig = Lanes(table_low, table_high, index)

    def codegen(context, builder, sig, args):
        low, high, index_value = args
        if HAVE_VPERMW:
            return _call_intrinsic(builder, "llvm.x86.avx512.vpermi2var.hi.512", _VEC,
                                   [low, index_value, high])
        both = builder.shuffle_vector(low, high, ir.Constant(
            ir.VectorType(ir.IntType(32), 2 * LANES), list(range(2 * LANES))))
        if HAVE_PSHUFB:
            table_bytes = builder.bitcast(both, ir.VectorType(_I8, 4 * LANES))
            return builder.bitcast(_lookup_pshufb(
                builder, table_bytes, _word_positions(builder, index_value, 2 * LANES)), _VEC)
        result = ir.Constant(_VEC, ir.Undefined)
        mask = ir.Constant(_I16, 2 * LANES - 1)
        for lane in range(LANES):
            position = ir.Constant(ir.IntType(32), lane)
            entry = builder.and_(builder.extract_element(index_value, position), mask)
            result = builder.insert_element(
                result, builder.extract_element(both, entry), position)
        return result

    return sig, codegen


@intrinsic
def shift_up(typingctx, value):
    """``result[0] = 0``, ``result[l] = value[l - 1]``: each lane takes the one below (the
    striped layout's step from one query segment to the next); int16, int32 or byte
    lanes."""
    vector_of = {**_VECTOR_OF, Bytes: _BVEC}
    if value not in vector_of:
        return None
    sig = value(value)

    def codegen(context, builder, sig, args):
        return _shifted_up(builder, args[0], vector_of[sig.return_type])

    return sig, codegen


def _shifted_up(builder, value, vector_type):
    lanes = vector_type.count
    zeros = ir.Constant(vector_type, [0] * lanes)
    order = ir.Constant(ir.VectorType(ir.IntType(32), lanes),
                        [0] + [lanes + lane for lane in range(lanes - 1)])
    return builder.shuffle_vector(zeros, value, order)


@intrinsic
def shift_in(typingctx, value, scalar):
    """:func:`shift_up` with ``scalar`` (truncated to the lane width) in lane 0 instead of 0:
    the striped layout's step from one segment to the next where the row above the first
    segment is given (a tile of the long pair, whose top edge another tile computed)."""
    vector_of = {**_VECTOR_OF, Bytes: _BVEC}
    if value not in vector_of or not isinstance(scalar, types.Integer):
        return None
    sig = value(value, scalar)

    def codegen(context, builder, sig, args):
        vector_type = vector_of[sig.return_type]
        shifted = _shifted_up(builder, args[0], vector_type)
        element = vector_type.element
        first = args[1]
        if first.type.width > element.width:
            first = builder.trunc(first, element)
        elif first.type.width < element.width:
            first = builder.sext(first, element)
        return builder.insert_element(shifted, first, ir.Constant(ir.IntType(32), 0))

    return sig, codegen


# ----------------------------------------------------------------------------- masks


def _mask(predicate):
    @intrinsic
    def operation(typingctx, a, b):
        if a not in _VECTOR_OF or b is not a:
            return None
        sig = types.int64(a, b)

        def codegen(context, builder, sig, args):
            count = _VECTOR_OF[sig.args[0]].count
            bits = builder.bitcast(builder.icmp_signed(predicate, args[0], args[1]),
                                   ir.IntType(count))
            return builder.zext(bits, ir.IntType(64))

        return sig, codegen

    return operation


mask_gt = _mask(">")
mask_gt.__doc__ = "Bit ``l`` set where ``a[l] > b[l]`` (signed)."
mask_eq = _mask("==")
mask_eq.__doc__ = "Bit ``l`` set where ``a[l] == b[l]``."
mask_ge = _mask(">=")
mask_ge.__doc__ = "Bit ``l`` set where ``a[l] >= b[l]`` (signed)."


@intrinsic
def select(typingctx, bits, a, b):
    """Lane ``l`` from ``a`` where bit ``l`` of the integer ``bits`` is set, else from ``b``."""
    if not isinstance(bits, types.Integer) or a is not Lanes or b is not Lanes:
        return None
    sig = Lanes(bits, a, b)

    def codegen(context, builder, sig, args):
        bits_value = args[0]
        if bits_value.type.width > LANES:
            bits_value = builder.trunc(bits_value, _MASK_INT)
        elif bits_value.type.width < LANES:
            bits_value = builder.zext(bits_value, _MASK_INT)
        predicate = builder.bitcast(bits_value, ir.VectorType(ir.IntType(1), LANES))
        return builder.select(predicate, args[1], args[2])

    return sig, codegen


@intrinsic
def gather(typingctx, table, index):
    """``result[l] = table[index[l]]`` for an int32 ``table`` (indices 0..32767, unchecked)."""
    if not (isinstance(table, types.Array) and table.dtype == types.int32) or index is not Lanes:
        return None
    sig = Lanes(table, index)

    def codegen(context, builder, sig, args):
        i32 = ir.IntType(32)
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        offsets = builder.zext(args[1], ir.VectorType(i32, LANES))
        # getelementptr i32, ptr base, <32 x i32> offsets: llvmlite's builder cannot type a
        # vector GEP, so the instruction is made by hand; base + 32-bit offsets is the form
        # the x86 backend turns into vpgatherdd (16 lanes per instruction)
        pointers = ir.instructions.GEPInstr(builder.block, data, [offsets], inbounds=True,
                                            name="gather_pointers", source_etype=i32)
        pointers.type = ir.VectorType(ir.PointerType(), LANES)
        builder._insert(pointers)
        all_lanes = ir.Constant(ir.VectorType(ir.IntType(1), LANES), [1] * LANES)
        passthru = ir.Constant(ir.VectorType(i32, LANES), [0] * LANES)
        gathered = _call_intrinsic(
            builder, _GATHER_NAME, ir.VectorType(i32, LANES),
            [pointers, ir.Constant(i32, 4), all_lanes, passthru])
        return builder.trunc(gathered, _VEC)

    return sig, codegen



# ----------------------------------------------------------------------------- byte lanes
#
# The first pass of the one-against-many scores (SWIPE's and Farrar's 8-bit pass): 64
# unsigned byte lanes per vector, twice the int16 lanes' cells per instruction. Values stay in
# [0, 255]; the kernel adds substitution scores biased to be non-negative and subtracts the
# bias with saturation, so every operation is one unsigned saturating instruction, and a
# lane whose best comes near 255 is recomputed in int16 lanes.


#: ``vpermb`` (AVX-512 VBMI): a 64-entry byte table lookup per lane in one instruction.
HAVE_VPERMB = _host_feature("avx512vbmi")


class BytesType(types.Type):
    """numba type of a ``<64 x i8>`` vector value (unsigned bytes)."""

    def __init__(self):
        super().__init__(name="Bytes_u8x64")


Bytes = BytesType()


@register_model(BytesType)
class _BytesModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _BVEC)


@intrinsic
def load_bytes(typingctx, array, offset):
    """``array[offset:offset+64]`` (uint8) as byte lanes."""
    if not (isinstance(array, types.Array) and array.dtype == types.uint8):
        return None
    sig = Bytes(array, offset)

    def codegen(context, builder, sig, args):
        pointer = _element_pointer(context, builder, sig.args[0], args[0], args[1], _BVEC)
        return builder.load(pointer, align=1)

    return sig, codegen


@intrinsic
def store_bytes(typingctx, array, offset, value):
    """``array[offset:offset+64] = value`` (uint8)."""
    if not (isinstance(array, types.Array) and array.dtype == types.uint8) or value is not Bytes:
        return None
    sig = types.void(array, offset, value)

    def codegen(context, builder, sig, args):
        pointer = _element_pointer(context, builder, sig.args[0], args[0], args[1], _BVEC)
        builder.store(args[2], pointer, align=1)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def splat_bytes(typingctx, scalar):
    """All byte lanes equal to ``scalar`` (truncated to 8 bits)."""
    if not isinstance(scalar, types.Integer):
        return None
    sig = Bytes(scalar)

    def codegen(context, builder, sig, args):
        value = args[0]
        value = builder.trunc(value, _I8) if value.type.width > 8 else value
        vector = builder.insert_element(ir.Constant(_BVEC, ir.Undefined), value,
                                        ir.Constant(ir.IntType(32), 0))
        zeros = ir.Constant(ir.VectorType(ir.IntType(32), BYTE_LANES), [0] * BYTE_LANES)
        return builder.shuffle_vector(vector, ir.Constant(_BVEC, ir.Undefined), zeros)

    return sig, codegen


def _byte_binary(name: str, doc: str):
    @intrinsic
    def operation(typingctx, a, b):
        if a is not Bytes or b is not Bytes:
            return None
        sig = Bytes(a, b)

        def codegen(context, builder, sig, args):
            return _call_intrinsic(builder, name, _BVEC, [args[0], args[1]])

        return sig, codegen

    operation.__doc__ = doc
    return operation


adds_bytes = _byte_binary("llvm.uadd.sat.v64i8", "Lane-wise ``min(x + y, 255)``.")
subs_bytes = _byte_binary("llvm.usub.sat.v64i8", "Lane-wise ``max(x - y, 0)``.")
max_bytes = _byte_binary("llvm.umax.v64i8", "Lane-wise unsigned maximum.")


@intrinsic
def permute_bytes(typingctx, table, index):
    """``result[l] = table[index[l] & 63]``: a 64-entry byte table lookup in every lane
    (``vpermb`` where the host has AVX-512 VBMI; elsewhere portable IR, scalarised)."""
    if table is not Bytes or index is not Bytes:
        return None
    sig = Bytes(table, index)

    def codegen(context, builder, sig, args):
        table_value, index_value = args
        if HAVE_VPERMB:
            return _call_intrinsic(builder, "llvm.x86.avx512.permvar.qi.512", _BVEC,
                                   [table_value, index_value])
        if HAVE_PSHUFB:
            return _lookup_pshufb(builder, table_value, builder.and_(
                index_value, ir.Constant(_BVEC, [BYTE_LANES - 1] * BYTE_LANES)))
        result = ir.Constant(_BVEC, ir.Undefined)
        mask = ir.Constant(_I8, BYTE_LANES - 1)
        for lane in range(BYTE_LANES):
            position = ir.Constant(ir.IntType(32), lane)
            entry = builder.and_(builder.extract_element(index_value, position), mask)
            result = builder.insert_element(
                result, builder.extract_element(table_value, entry), position)
        return result

    return sig, codegen


def _byte_mask(predicate):
    @intrinsic
    def operation(typingctx, a, b):
        if a is not Bytes or b is not Bytes:
            return None
        sig = types.int64(a, b)

        def codegen(context, builder, sig, args):
            compared = builder.icmp_unsigned(predicate, args[0], args[1])
            return builder.bitcast(compared, ir.IntType(BYTE_LANES))

        return sig, codegen

    return operation


mask_gt_bytes = _byte_mask(">")
mask_gt_bytes.__doc__ = "Bit ``l`` set where ``a[l] > b[l]`` (unsigned bytes)."
mask_eq_bytes = _byte_mask("==")
mask_eq_bytes.__doc__ = "Bit ``l`` set where ``a[l] == b[l]``."
