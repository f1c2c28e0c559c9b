/*
 * The codec's native reader: one small interpreter of layout tables.
 *
 * Issue 28 asks for decoding at least as fast as the fastest installable
 * decoder, built from the same generated code, with the pure-Python readers
 * as the fallback.  The generator writes, beside each message's Python
 * readers, a layout table per wire layout (kafkacompat/_codegen/
 * render_layouts.py): the struct's class, whether it is flexible, its wire
 * fields in order (slot name, an op word giving the wire type and the
 * nullable/compact/array/keyed flags, the child layout of a struct), its
 * known tagged fields and the defaults of the fields absent at that version.
 * This module compiles such a table once, resolving every slot name to its
 * offset in the object, and then reads bytes into the very same classes:
 * objects created with tp_alloc and their slots stored directly, lists
 * allocated at their final size (up to 4,096 elements, beyond which they grow
 * as elements are read), strings copied straight from the buffer.
 *
 * Every rule of the Python readers is kept (one byte counts unchecked, other
 * counts held to the bytes left and to 1,000,000 elements, tagged sections to
 * 10,000 fields and to the bytes left, before anything is allocated).  When
 * the bytes break a rule, or take a path this module does not model (a
 * varlong beyond 64 bits), the reader gives up and calls the Python reader
 * of the same layout, which raises the same DecodeError with the same offset
 * as it always has (or returns the value).  So errors, and their messages,
 * come from one place.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define HOT_INLINE static inline __attribute__((always_inline))
#else
#define HOT_INLINE static inline
#endif

#ifndef KAFKACOMPAT_NATIVE_CRC32
#define KAFKACOMPAT_NATIVE_CRC32 ""
#endif

/* The op word; kafkacompat/_codegen/render_layouts.py writes the same numbers. */
enum {
    K_BOOL, K_INT8, K_INT16, K_INT32, K_INT64, K_UINT16, K_UINT32, K_FLOAT64,
    K_VARINT, K_VARLONG, K_UUID, K_STRING, K_BYTES, K_STRUCT, K_KINDS
};
#define KIND_MASK 15
#define F_NULLABLE 16
#define F_COMPACT 32
#define F_ARRAY 64
#define F_KEYED 128
/* How an absent or tagged field gets its default. */
enum { D_CONST, D_LIST, D_KEYED, D_STRUCT, D_ZERO_UUID, D_MODES };

static const char *KIND_NAMES[K_KINDS] = {
    "bool", "int8", "int16", "int32", "int64", "uint16", "uint32", "float64",
    "varint", "varlong", "uuid", "string", "bytes", "struct",
};
static const int FIXED_WIDTH[K_KINDS] = {1, 1, 2, 4, 8, 2, 4, 8, 0, 0, 0, 0, 0, 0};
/* Up to this many elements (32 kB of pointers), a list is allocated at its final size. */
#define PREALLOCATED_ELEMENTS 4096

/* ------------------------------------------------------------ the world -- */
/* Loaded from kafkacompat.protocol._wire (and uuid) when the first table is compiled. */

static PyTypeObject *keyed_list_type;
static PyObject *empty_tags;
static Py_ssize_t max_array_elements;
static Py_ssize_t max_tagged_fields;
static PyTypeObject *uuid_type;
static PyObject *uuid_unknown; /* uuid.SafeUUID.unknown */
static PyObject *zero_uuid;
static Py_ssize_t uuid_int_offset, uuid_safe_offset;

static Py_ssize_t slot_offset(PyTypeObject *type, PyObject *name);

static int load_wire(void) {
    if (keyed_list_type != NULL) {
        return 0;
    }
    PyObject *wire = PyImport_ImportModule("kafkacompat.protocol._wire");
    if (wire == NULL) {
        return -1;
    }
    PyObject *keyed = PyObject_GetAttrString(wire, "KeyedList");
    PyObject *tags = PyObject_GetAttrString(wire, "EMPTY_TAGS");
    PyObject *arrays = PyObject_GetAttrString(wire, "MAX_ARRAY_ELEMENTS");
    PyObject *fields = PyObject_GetAttrString(wire, "MAX_TAGGED_FIELDS");
    Py_DECREF(wire);
    int ok = keyed && tags && arrays && fields && PyType_Check(keyed) &&
             PyType_IsSubtype((PyTypeObject *)keyed, &PyList_Type) && PyTuple_CheckExact(tags);
    if (ok) {
        max_array_elements = PyLong_AsSsize_t(arrays);
        max_tagged_fields = PyLong_AsSsize_t(fields);
        ok = !PyErr_Occurred() && max_array_elements >= 0 && max_tagged_fields >= 0;
    }
    Py_XDECREF(arrays);
    Py_XDECREF(fields);
    if (!ok) {
        Py_XDECREF(keyed);
        Py_XDECREF(tags);
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "kafkacompat.protocol._wire is not what the native reader expects");
        }
        return -1;
    }
    keyed_list_type = (PyTypeObject *)keyed;
    empty_tags = tags;
    return 0;
}

static int load_uuid(void) {
    if (uuid_type != NULL) {
        return 0;
    }
    PyObject *module = PyImport_ImportModule("uuid");
    if (module == NULL) {
        return -1;
    }
    PyObject *type = PyObject_GetAttrString(module, "UUID");
    PyObject *safe = PyObject_GetAttrString(module, "SafeUUID");
    Py_DECREF(module);
    PyObject *unknown = safe ? PyObject_GetAttrString(safe, "unknown") : NULL;
    Py_XDECREF(safe);
    PyObject *wire = PyImport_ImportModule("kafkacompat.protocol._wire");
    PyObject *zero = wire ? PyObject_GetAttrString(wire, "ZERO_UUID") : NULL;
    Py_XDECREF(wire);
    if (type == NULL || unknown == NULL || zero == NULL || !PyType_Check(type)) {
        goto fail;
    }
    PyObject *name = PyUnicode_InternFromString("int");
    Py_ssize_t int_offset = name ? slot_offset((PyTypeObject *)type, name) : -1;
    Py_XDECREF(name);
    name = PyUnicode_InternFromString("is_safe");
    Py_ssize_t safe_offset = name ? slot_offset((PyTypeObject *)type, name) : -1;
    Py_XDECREF(name);
    if (int_offset < 0 || safe_offset < 0) {
        goto fail;
    }
    uuid_type = (PyTypeObject *)type;
    uuid_unknown = unknown;
    zero_uuid = zero;
    uuid_int_offset = int_offset;
    uuid_safe_offset = safe_offset;
    return 0;
fail:
    Py_XDECREF(type);
    Py_XDECREF(unknown);
    Py_XDECREF(zero);
    if (!PyErr_Occurred()) {
        PyErr_SetString(PyExc_TypeError, "uuid.UUID is not what the native reader expects");
    }
    return -1;
}

/* ---------------------------------------------------------- the tables -- */

typedef struct Layout Layout;

typedef struct {
    Py_ssize_t offset; /* of the slot in the object */
    int op;
    Layout *child; /* a struct's layout (alone or as elements) */
} Field;

typedef struct {
    Py_ssize_t offset;
    int mode;
    PyObject *value; /* D_CONST: the value; D_STRUCT: the class */
} Default;

typedef struct {
    uint64_t tag;
    Field field;
    Default initial;
} Tagged;

struct Layout {
    PyTypeObject *type;
    int flexible;
    Py_ssize_t unknown_offset;
    Py_ssize_t n_wire, n_tagged, n_absent;
    Field *wire;
    Tagged *tagged;
    Default *absent;
};

static void free_layout(Layout *layout);

static void free_field(Field *field) {
    if (field->child != NULL) {
        free_layout(field->child);
        field->child = NULL;
    }
}

static void free_layout(Layout *layout) {
    if (layout == NULL) {
        return;
    }
    for (Py_ssize_t i = 0; i < layout->n_wire; i++) {
        free_field(&layout->wire[i]);
    }
    for (Py_ssize_t i = 0; i < layout->n_tagged; i++) {
        free_field(&layout->tagged[i].field);
        Py_XDECREF(layout->tagged[i].initial.value);
    }
    for (Py_ssize_t i = 0; i < layout->n_absent; i++) {
        Py_XDECREF(layout->absent[i].value);
    }
    PyMem_Free(layout->wire);
    PyMem_Free(layout->tagged);
    PyMem_Free(layout->absent);
    Py_XDECREF(layout->type);
    PyMem_Free(layout);
}

static int visit_layout(Layout *layout, visitproc visit, void *arg) {
    if (layout == NULL) {
        return 0;
    }
    Py_VISIT(layout->type);
    for (Py_ssize_t i = 0; i < layout->n_wire; i++) {
        int err = visit_layout(layout->wire[i].child, visit, arg);
        if (err) {
            return err;
        }
    }
    for (Py_ssize_t i = 0; i < layout->n_tagged; i++) {
        Py_VISIT(layout->tagged[i].initial.value);
        int err = visit_layout(layout->tagged[i].field.child, visit, arg);
        if (err) {
            return err;
        }
    }
    for (Py_ssize_t i = 0; i < layout->n_absent; i++) {
        Py_VISIT(layout->absent[i].value);
    }
    return 0;
}

static int bad_table(const char *what, PyObject *item) {
    PyErr_Format(PyExc_ValueError, "bad layout table: %s (%R)", what, item);
    return -1;
}

/* The offset of a writable object slot named ``name`` of ``type`` (a member descriptor). */
static Py_ssize_t slot_offset(PyTypeObject *type, PyObject *name) {
    PyObject *descr = PyObject_GetAttr((PyObject *)type, name);
    if (descr == NULL) {
        return -1;
    }
    Py_ssize_t offset = -1;
    if (PyObject_TypeCheck(descr, &PyMemberDescr_Type)) {
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type == T_OBJECT_EX && !(member->flags & READONLY) && member->offset > 0) {
            offset = member->offset;
        }
    }
    Py_DECREF(descr);
    if (offset < 0) {
        PyErr_Format(PyExc_TypeError, "%s.%U is not a writable slot", type->tp_name, name);
    }
    return offset;
}

static Layout *compile_layout(PyObject *table, int depth);

static int compile_default(PyTypeObject *type, PyObject *name, PyObject *mode, PyObject *value, Default *out) {
    out->offset = slot_offset(type, name);
    if (out->offset < 0) {
        return -1;
    }
    long m = PyLong_AsLong(mode);
    if (m < 0 || m >= D_MODES) {
        return PyErr_Occurred() ? -1 : bad_table("default mode", mode);
    }
    out->mode = (int)m;
    if (m == D_STRUCT && !PyType_Check(value)) {
        return bad_table("a struct default needs its class", value);
    }
    if (m == D_ZERO_UUID) {
        if (load_uuid() < 0) {
            return -1;
        }
        value = zero_uuid;
    }
    Py_INCREF(value);
    out->value = value;
    return 0;
}

static int compile_field(PyTypeObject *type, PyObject *name, PyObject *op, PyObject *child, Field *out, int depth) {
    out->offset = slot_offset(type, name);
    if (out->offset < 0) {
        return -1;
    }
    long value = PyLong_AsLong(op);
    if (value < 0 || value > 255 || (value & KIND_MASK) >= K_KINDS) {
        return PyErr_Occurred() ? -1 : bad_table("op", op);
    }
    out->op = (int)value;
    int kind = out->op & KIND_MASK;
    if (kind == K_STRUCT) {
        out->child = compile_layout(child, depth + 1);
        return out->child == NULL ? -1 : 0;
    }
    if (child != Py_None) {
        return bad_table("only a struct has a child layout", child);
    }
    if (kind == K_UUID && load_uuid() < 0) {
        return -1;
    }
    return 0;
}

/* (class, flexible, ((name, op, child), ...), ((tag, name, op, child, mode, value), ...),
 *  ((name, mode, value), ...)) */
static Layout *compile_layout(PyObject *table, int depth) {
    if (depth > 64) {
        bad_table("nested too deep", table);
        return NULL;
    }
    if (!PyTuple_Check(table) || PyTuple_GET_SIZE(table) != 5) {
        bad_table("a layout is a 5-tuple", table);
        return NULL;
    }
    PyObject *cls = PyTuple_GET_ITEM(table, 0);
    PyObject *wire = PyTuple_GET_ITEM(table, 2);
    PyObject *tagged = PyTuple_GET_ITEM(table, 3);
    PyObject *absent = PyTuple_GET_ITEM(table, 4);
    if (!PyType_Check(cls) || ((PyTypeObject *)cls)->tp_itemsize != 0 || !PyTuple_Check(wire) ||
        !PyTuple_Check(tagged) || !PyTuple_Check(absent)) {
        bad_table("layout parts", table);
        return NULL;
    }
    Layout *layout = PyMem_Calloc(1, sizeof(Layout));
    if (layout == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)cls;
    Py_INCREF(type);
    layout->type = type;
    layout->flexible = PyObject_IsTrue(PyTuple_GET_ITEM(table, 1));
    PyObject *unknown = PyUnicode_InternFromString("_unknown_tags");
    layout->unknown_offset = unknown ? slot_offset(type, unknown) : -1;
    Py_XDECREF(unknown);
    if (layout->flexible < 0 || layout->unknown_offset < 0) {
        goto fail;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(wire);
    layout->wire = PyMem_Calloc(n ? n : 1, sizeof(Field));
    n = PyTuple_GET_SIZE(tagged);
    layout->tagged = PyMem_Calloc(n ? n : 1, sizeof(Tagged));
    n = PyTuple_GET_SIZE(absent);
    layout->absent = PyMem_Calloc(n ? n : 1, sizeof(Default));
    if (!layout->wire || !layout->tagged || !layout->absent) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(wire); i++) {
        PyObject *item = PyTuple_GET_ITEM(wire, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 3) {
            bad_table("a wire field is (name, op, child)", item);
            goto fail;
        }
        layout->n_wire = i + 1;
        if (compile_field(type, PyTuple_GET_ITEM(item, 0), PyTuple_GET_ITEM(item, 1), PyTuple_GET_ITEM(item, 2),
                          &layout->wire[i], depth) < 0) {
            goto fail;
        }
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tagged); i++) {
        PyObject *item = PyTuple_GET_ITEM(tagged, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 6 || !layout->flexible) {
            bad_table("a tagged field is (tag, name, op, child, mode, value) of a flexible layout", item);
            goto fail;
        }
        Tagged *t = &layout->tagged[i];
        layout->n_tagged = i + 1;
        t->tag = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(item, 0));
        if (PyErr_Occurred()) {
            goto fail;
        }
        PyObject *name = PyTuple_GET_ITEM(item, 1);
        if (compile_field(type, name, PyTuple_GET_ITEM(item, 2), PyTuple_GET_ITEM(item, 3), &t->field, depth) < 0 ||
            compile_default(type, name, PyTuple_GET_ITEM(item, 4), PyTuple_GET_ITEM(item, 5), &t->initial) < 0) {
            goto fail;
        }
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(absent); i++) {
        PyObject *item = PyTuple_GET_ITEM(absent, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 3) {
            bad_table("an absent field is (name, mode, value)", item);
            goto fail;
        }
        layout->n_absent = i + 1;
        if (compile_default(type, PyTuple_GET_ITEM(item, 0), PyTuple_GET_ITEM(item, 1), PyTuple_GET_ITEM(item, 2),
                            &layout->absent[i]) < 0) {
            goto fail;
        }
    }
    return layout;
fail:
    free_layout(layout);
    return NULL;
}

/* ---------------------------------------------------------- reading -- */
/* Every reader returns a new reference, or NULL when the bytes break a rule
 * (no exception needed: the caller clears whatever is set and falls back). */

typedef struct {
    const unsigned char *data;
    Py_ssize_t len;
    Py_ssize_t pos;
} Cursor;

#define LEFT(c) ((c)->len - (c)->pos)

static inline void store(PyObject *obj, Py_ssize_t offset, PyObject *value) {
    PyObject **slot = (PyObject **)((char *)obj + offset);
    PyObject *old = *slot;
    *slot = value;
    Py_XDECREF(old);
}

/* Into a slot of an object just allocated (still NULL). */
static inline void store_new(PyObject *obj, Py_ssize_t offset, PyObject *value) {
    *(PyObject **)((char *)obj + offset) = value;
}

static inline uint16_t be16(const unsigned char *p) { return (uint16_t)((p[0] << 8) | p[1]); }

static inline uint32_t be32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static inline uint64_t be64(const unsigned char *p) { return ((uint64_t)be32(p) << 32) | be32(p + 4); }

/* An unsigned varint of at most 5 bytes, as _wire.read_uvarint (no range check on the 5th). */
static inline int read_uvarint(Cursor *c, uint64_t *out) {
    uint64_t value = 0;
    for (int i = 0; i < 5; i++) {
        if (c->pos >= c->len) {
            return -1;
        }
        unsigned byte = c->data[c->pos++];
        value |= (uint64_t)(byte & 0x7F) << (7 * i);
        if (byte < 0x80) {
            *out = value;
            return 0;
        }
    }
    return -1;
}

/* Up to 10 bytes; a value past 64 bits is left to the Python reader (it has big ints). */
static inline int read_uvarlong(Cursor *c, uint64_t *out) {
    uint64_t value = 0;
    for (int i = 0; i < 10; i++) {
        if (c->pos >= c->len) {
            return -1;
        }
        unsigned byte = c->data[c->pos++];
        if (i == 9 && (byte & 0x7F) > 1) {
            return -1;
        }
        value |= (uint64_t)(byte & 0x7F) << (7 * i);
        if (byte < 0x80) {
            *out = value;
            return 0;
        }
    }
    return -1;
}

static inline PyObject *unzigzag(uint64_t raw) {
    int64_t half = (int64_t)(raw >> 1);
    return PyLong_FromLongLong((raw & 1) ? -half - 1 : half);
}

static PyObject *new_text(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n && s[i] < 0x80) {
        i++;
    }
    if (i < n) {
        return PyUnicode_DecodeUTF8((const char *)s, n, NULL);
    }
    PyObject *text = PyUnicode_New(n, 127);
    if (text != NULL && n) {
        memcpy(PyUnicode_1BYTE_DATA(text), s, (size_t)n);
    }
    return text;
}

static PyObject *new_uuid(const unsigned char *p) {
    PyObject *value = _PyLong_FromByteArray(p, 16, 0, 0);
    if (value == NULL) {
        return NULL;
    }
    PyObject *obj = uuid_type->tp_alloc(uuid_type, 0);
    if (obj == NULL) {
        Py_DECREF(value);
        return NULL;
    }
    store(obj, uuid_int_offset, value);
    Py_INCREF(uuid_unknown);
    store(obj, uuid_safe_offset, uuid_unknown);
    return obj;
}

/* A fixed-width value at p (the caller checked the room). */
HOT_INLINE PyObject *fixed_value(int kind, const unsigned char *p) {
    switch (kind) {
    case K_BOOL:
        return PyBool_FromLong(p[0] != 0);
    case K_INT8:
        return PyLong_FromLong((int8_t)p[0]);
    case K_INT16:
        return PyLong_FromLong((int16_t)be16(p));
    case K_INT32:
        return PyLong_FromLong((int32_t)be32(p));
    case K_INT64:
        return PyLong_FromLongLong((int64_t)be64(p));
    case K_UINT16:
        return PyLong_FromLong(be16(p));
    case K_UINT32:
        return PyLong_FromUnsignedLong(be32(p));
    case K_FLOAT64:
        return PyFloat_FromDouble(PyFloat_Unpack8((const char *)p, 0));
    default:
        return NULL;
    }
}

/* A string or bytes length: classic (int16 / int32, -1 for null) or compact (uvarint N+1).
 * Returns 0 and the length, 1 for null, -1 when it breaks a rule; the room is checked. */
static inline int read_length(Cursor *c, int kind, int compact, Py_ssize_t *out) {
    if (compact) {
        uint64_t raw;
        if (read_uvarint(c, &raw) < 0) {
            return -1;
        }
        if (raw == 0) {
            return 1;
        }
        if (raw - 1 > (uint64_t)LEFT(c)) {
            return -1;
        }
        *out = (Py_ssize_t)(raw - 1);
        return 0;
    }
    int64_t length;
    if (kind == K_STRING) {
        if (LEFT(c) < 2) {
            return -1;
        }
        length = (int16_t)be16(c->data + c->pos);
        c->pos += 2;
    } else {
        if (LEFT(c) < 4) {
            return -1;
        }
        length = (int32_t)be32(c->data + c->pos);
        c->pos += 4;
    }
    if (length == -1) {
        return 1;
    }
    if (length < 0 || length > LEFT(c)) {
        return -1;
    }
    *out = (Py_ssize_t)length;
    return 0;
}

static PyObject *read_struct(Cursor *c, const Layout *layout);

/* One value that is not an array. */
static PyObject *read_scalar(Cursor *c, int op, const Layout *child) {
    int kind = op & KIND_MASK;
    int width = FIXED_WIDTH[kind];
    if (width) {
        if (LEFT(c) < width) {
            return NULL;
        }
        PyObject *value = fixed_value(kind, c->data + c->pos);
        c->pos += width;
        return value;
    }
    switch (kind) {
    case K_VARINT: {
        uint64_t raw;
        return read_uvarint(c, &raw) < 0 ? NULL : unzigzag(raw);
    }
    case K_VARLONG: {
        uint64_t raw;
        return read_uvarlong(c, &raw) < 0 ? NULL : unzigzag(raw);
    }
    case K_UUID: {
        if (LEFT(c) < 16) {
            return NULL;
        }
        PyObject *value = new_uuid(c->data + c->pos);
        c->pos += 16;
        return value;
    }
    case K_STRING:
    case K_BYTES: {
        Py_ssize_t length;
        int got = read_length(c, kind, op & F_COMPACT, &length);
        if (got < 0 || (got == 1 && !(op & F_NULLABLE))) {
            return NULL;
        }
        if (got == 1) {
            Py_RETURN_NONE;
        }
        const unsigned char *start = c->data + c->pos;
        c->pos += length;
        return kind == K_STRING ? new_text(start, length)
                                : PyBytes_FromStringAndSize((const char *)start, length);
    }
    case K_STRUCT:
        if (op & F_NULLABLE) {
            if (LEFT(c) < 1) {
                return NULL;
            }
            if ((int8_t)c->data[c->pos++] < 0) {
                Py_RETURN_NONE;
            }
        }
        return read_struct(c, child);
    default:
        return NULL;
    }
}

/* An empty list of ``type`` (list or KeyedList) with room for exactly ``n`` items, all NULL. */
static PyObject *new_list(PyTypeObject *type, Py_ssize_t n) {
    if (type == &PyList_Type) {
        return PyList_New(n);
    }
    PyListObject *list = (PyListObject *)type->tp_alloc(type, 0);
    if (list == NULL || n == 0) {
        return (PyObject *)list;
    }
    list->ob_item = PyMem_Calloc((size_t)n, sizeof(PyObject *));
    if (list->ob_item == NULL) {
        Py_DECREF(list);
        return PyErr_NoMemory();
    }
    list->allocated = n;
    Py_SET_SIZE(list, n);
    return (PyObject *)list;
}

/* ``n`` numbers of ``kind`` from ``p`` into ``items`` (the room checked); one loop per kind, the
 * common int32 (replica lists, ISRs, partition ids) with no switch per element. */
static int fill_numbers(PyObject **items, int kind, const unsigned char *p, int64_t n) {
    if (kind == K_INT32) {
        for (int64_t i = 0; i < n; i++, p += 4) {
            if ((items[i] = PyLong_FromLong((int32_t)be32(p))) == NULL) {
                return -1;
            }
        }
        return 0;
    }
    int width = FIXED_WIDTH[kind];
    for (int64_t i = 0; i < n; i++, p += width) {
        if ((items[i] = fixed_value(kind, p)) == NULL) {
            return -1;
        }
    }
    return 0;
}

static PyObject *read_array(Cursor *c, int op, const Layout *child) {
    int64_t n;
    if (op & F_COMPACT) {
        if (LEFT(c) < 1) {
            return NULL;
        }
        unsigned first = c->data[c->pos];
        if (first < 0x80) { /* at most 126 elements: no room check, as in Python */
            n = (int64_t)first - 1;
            c->pos++;
        } else {
            uint64_t raw;
            if (read_uvarint(c, &raw) < 0) {
                return NULL;
            }
            n = (int64_t)raw - 1;
            if (n > LEFT(c) || n > max_array_elements) {
                return NULL;
            }
        }
    } else {
        if (LEFT(c) < 4) {
            return NULL;
        }
        n = (int32_t)be32(c->data + c->pos);
        c->pos += 4;
        if (n > LEFT(c) || n > max_array_elements || n < -1) {
            return NULL;
        }
    }
    if (n < 0) {
        if (op & F_NULLABLE) {
            Py_RETURN_NONE;
        }
        return NULL;
    }
    int kind = op & KIND_MASK;
    int width = FIXED_WIDTH[kind];
    if (width && n * width > LEFT(c)) { /* numbers: all their bytes before the list */
        return NULL;
    }
    /* Numbers are all there (checked above): their list is made at its size. A long array of
     * anything else grows as its elements are read, so that a count the bytes do not bear out
     * (its first element bad) costs no more than the elements read. */
    int grow = !width && n > PREALLOCATED_ELEMENTS;
    PyObject *list = new_list((op & F_KEYED) ? keyed_list_type : &PyList_Type, grow ? 0 : (Py_ssize_t)n);
    if (list == NULL) {
        return NULL;
    }
    PyObject **items = grow ? NULL : ((PyListObject *)list)->ob_item;
    if (width) {
        if (fill_numbers(items, kind, c->data + c->pos, n) < 0) {
            Py_DECREF(list);
            return NULL;
        }
        c->pos += (Py_ssize_t)(n * width);
        return list;
    }
    int element = kind | (op & F_COMPACT); /* elements are never null */
    for (int64_t i = 0; i < n; i++) {
        PyObject *value = kind == K_STRUCT ? read_struct(c, child) : read_scalar(c, element, child);
        if (value == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        if (items != NULL) {
            items[i] = value;
        } else if (PyList_Append(list, value) < 0) {
            Py_DECREF(value);
            Py_DECREF(list);
            return NULL;
        } else {
            Py_DECREF(value);
        }
    }
    return list;
}

static inline PyObject *read_value(Cursor *c, const Field *field) {
    return (field->op & F_ARRAY) ? read_array(c, field->op, field->child) : read_scalar(c, field->op, field->child);
}

static PyObject *default_value(const Default *d) {
    switch (d->mode) {
    case D_LIST:
        return PyList_New(0);
    case D_KEYED:
        return new_list(keyed_list_type, 0);
    case D_STRUCT:
        return PyObject_CallNoArgs(d->value);
    default: /* D_CONST, D_ZERO_UUID: one shared immutable value */
        Py_INCREF(d->value);
        return d->value;
    }
}

/* The tagged section of ``obj``: known tags read into their slots, the others kept. */
static int read_tags(Cursor *c, const Layout *layout, PyObject *obj) {
    if (LEFT(c) < 1) {
        return -1;
    }
    if (c->data[c->pos] == 0) {
        c->pos++;
        Py_INCREF(empty_tags);
        store(obj, layout->unknown_offset, empty_tags);
        return 0;
    }
    uint64_t count;
    if (read_uvarint(c, &count) < 0 || count > (uint64_t)max_tagged_fields || 2 * count > (uint64_t)LEFT(c)) {
        return -1;
    }
    PyObject *seen = NULL;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t tag, size;
        if (read_uvarint(c, &tag) < 0 || read_uvarint(c, &size) < 0 || size > (uint64_t)LEFT(c)) {
            goto fail;
        }
        Py_ssize_t end = c->pos + (Py_ssize_t)size;
        const Tagged *known = NULL;
        for (Py_ssize_t k = 0; k < layout->n_tagged; k++) {
            if (layout->tagged[k].tag == tag) {
                known = &layout->tagged[k];
                break;
            }
        }
        if (known != NULL) {
            PyObject *value = read_value(c, &known->field);
            if (value == NULL) {
                goto fail;
            }
            store(obj, known->field.offset, value);
            if (c->pos != end) {
                goto fail;
            }
            continue;
        }
        if (seen == NULL && (seen = PyList_New(0)) == NULL) {
            goto fail;
        }
        PyObject *pair = Py_BuildValue("(Ky#)", (unsigned long long)tag, c->data + c->pos, (Py_ssize_t)size);
        if (pair == NULL || PyList_Append(seen, pair) < 0) {
            Py_XDECREF(pair);
            goto fail;
        }
        Py_DECREF(pair);
        c->pos = end;
    }
    if (seen != NULL) {
        PyObject *kept = PyList_AsTuple(seen);
        Py_DECREF(seen);
        if (kept == NULL) {
            return -1;
        }
        store(obj, layout->unknown_offset, kept);
    } else {
        Py_INCREF(empty_tags);
        store(obj, layout->unknown_offset, empty_tags);
    }
    return 0;
fail:
    Py_XDECREF(seen);
    return -1;
}

static PyObject *read_struct(Cursor *c, const Layout *layout) {
    PyObject *obj = layout->type->tp_alloc(layout->type, 0);
    if (obj == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < layout->n_wire; i++) {
        const Field *field = &layout->wire[i];
        int kind = field->op & KIND_MASK;
        int width = FIXED_WIDTH[kind];
        PyObject *value;
        if (width && !(field->op & F_ARRAY)) { /* the common fixed-width field, inline */
            if (LEFT(c) < width) {
                goto fail;
            }
            value = fixed_value(kind, c->data + c->pos);
            c->pos += width;
        } else {
            value = read_value(c, field);
        }
        if (value == NULL) {
            goto fail;
        }
        store_new(obj, field->offset, value);
    }
    for (Py_ssize_t i = 0; i < layout->n_absent; i++) {
        PyObject *value = default_value(&layout->absent[i]);
        if (value == NULL) {
            goto fail;
        }
        store_new(obj, layout->absent[i].offset, value);
    }
    if (!layout->flexible) {
        Py_INCREF(empty_tags);
        store(obj, layout->unknown_offset, empty_tags);
        return obj;
    }
    for (Py_ssize_t i = 0; i < layout->n_tagged; i++) {
        PyObject *value = default_value(&layout->tagged[i].initial);
        if (value == NULL) {
            goto fail;
        }
        store(obj, layout->tagged[i].initial.offset, value);
    }
    if (read_tags(c, layout, obj) < 0) {
        goto fail;
    }
    return obj;
fail:
    Py_DECREF(obj);
    return NULL;
}

/* ------------------------------------------------------ the Reader type -- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *table;
    PyObject *fallback;
    Layout *root;
    Py_ssize_t fallbacks;
} ReaderObject;

static int compile_root(ReaderObject *self) {
    if (self->root != NULL) {
        return 0;
    }
    if (load_wire() < 0) {
        return -1;
    }
    /* Imports may let another thread in, and compile the same table: the first one kept wins. */
    Layout *layout = compile_layout(self->table, 0);
    if (layout == NULL) {
        return -1;
    }
    if (self->root == NULL) {
        self->root = layout;
    } else {
        free_layout(layout);
    }
    return 0;
}

/* The message and where it ended, or NULL: with an exception set when the table is bad, else
 * (``*refused`` set) when the bytes break a rule and the Python reader must say how. */
static PyObject *read_native(ReaderObject *self, PyObject *buf, PyObject *start, int *refused) {
    *refused = 1;
    if (!PyBytes_CheckExact(buf) || !PyLong_CheckExact(start)) {
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(start);
    if (pos < 0 || pos > PyBytes_GET_SIZE(buf)) {
        PyErr_Clear();
        return NULL;
    }
    if (compile_root(self) < 0) {
        *refused = 0;
        return NULL;
    }
    Cursor cursor = {(const unsigned char *)PyBytes_AS_STRING(buf), PyBytes_GET_SIZE(buf), pos};
    PyObject *obj = read_struct(&cursor, self->root);
    if (obj == NULL) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *end = PyLong_FromSsize_t(cursor.pos);
    if (end == NULL) {
        Py_DECREF(obj);
        PyErr_Clear();
        return NULL;
    }
    PyObject *result = PyTuple_New(2);
    if (result == NULL) {
        Py_DECREF(obj);
        Py_DECREF(end);
        PyErr_Clear();
        return NULL;
    }
    PyTuple_SET_ITEM(result, 0, obj);
    PyTuple_SET_ITEM(result, 1, end);
    *refused = 0;
    return result;
}

static PyObject *reader_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    ReaderObject *self = (ReaderObject *)callable;
    if (PyVectorcall_NARGS(nargsf) == 2 && kwnames == NULL) {
        int refused;
        PyObject *result = read_native(self, args[0], args[1], &refused);
        if (result != NULL || !refused) {
            return result;
        }
    }
    self->fallbacks++;
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

static PyObject *reader_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"table", "fallback", NULL};
    PyObject *table, *fallback;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O:Reader", keywords, &PyTuple_Type, &table, &fallback)) {
        return NULL;
    }
    if (!PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "Reader: the fallback must be callable");
        return NULL;
    }
    ReaderObject *self = (ReaderObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = reader_vectorcall;
    Py_INCREF(table);
    self->table = table;
    Py_INCREF(fallback);
    self->fallback = fallback;
    return (PyObject *)self;
}

static int reader_traverse(ReaderObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->table);
    Py_VISIT(self->fallback);
    return visit_layout(self->root, visit, arg);
}

static int reader_clear(ReaderObject *self) {
    Py_CLEAR(self->table);
    Py_CLEAR(self->fallback);
    Layout *root = self->root;
    self->root = NULL;
    free_layout(root);
    return 0;
}

static void reader_dealloc(ReaderObject *self) {
    PyObject_GC_UnTrack(self);
    reader_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *reader_strict(ReaderObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "strict(buf, pos)");
        return NULL;
    }
    int refused;
    PyObject *result = read_native(self, args[0], args[1], &refused);
    if (result == NULL && refused) {
        Py_RETURN_NONE;
    }
    return result;
}

static PyObject *reader_compile(ReaderObject *self, PyObject *unused) {
    if (compile_root(self) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef reader_methods[] = {
    {"strict", (PyCFunction)(void (*)(void))reader_strict, METH_FASTCALL,
     "strict(buf, pos): (message, end) read natively, or None where the bytes break a rule (no fallback)"},
    {"compile", (PyCFunction)reader_compile, METH_NOARGS,
     "compile(): check and compile the layout table now (it is otherwise compiled on first use)"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef reader_members[] = {
    {"fallback", T_OBJECT, offsetof(ReaderObject, fallback), READONLY, "the Python reader of the same layout"},
    {"table", T_OBJECT, offsetof(ReaderObject, table), READONLY, "the layout table"},
    {"fallbacks", T_PYSSIZET, offsetof(ReaderObject, fallbacks), READONLY,
     "how many reads the Python reader finished (bytes that break a rule)"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkacompat.protocol._native.Reader",
    .tp_doc = "Reader(table, fallback): reads one wire layout into the generated classes;\n"
              "bytes that break a rule are handed to ``fallback`` (the Python reader), which raises.",
    .tp_basicsize = sizeof(ReaderObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = reader_new,
    .tp_dealloc = (destructor)reader_dealloc,
    .tp_traverse = (traverseproc)reader_traverse,
    .tp_clear = (inquiry)reader_clear,
    .tp_vectorcall_offset = offsetof(ReaderObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_methods = reader_methods,
    .tp_members = reader_members,
};

/* ------------------------------------------------------------ the module -- */

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "kafkacompat.protocol._native",
    .m_doc = "The codec's native reader (see kafkacompat/protocol/codec_path.py).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__native(void) {
    if (PyType_Ready(&ReaderType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&native_module);
    if (module == NULL) {
        return NULL;
    }
    PyObject *ops = PyDict_New();
    PyObject *modes = PyDict_New();
    int ok = ops && modes;
    for (int k = 0; ok && k < K_KINDS; k++) {
        PyObject *value = PyLong_FromLong(k);
        ok = value && PyDict_SetItemString(ops, KIND_NAMES[k], value) == 0;
        Py_XDECREF(value);
    }
    static const char *flag_names[] = {"nullable", "compact", "array", "keyed"};
    static const int flag_values[] = {F_NULLABLE, F_COMPACT, F_ARRAY, F_KEYED};
    for (int f = 0; ok && f < 4; f++) {
        PyObject *value = PyLong_FromLong(flag_values[f]);
        ok = value && PyDict_SetItemString(ops, flag_names[f], value) == 0;
        Py_XDECREF(value);
    }
    static const char *mode_names[D_MODES] = {"const", "list", "keyed", "struct", "zero_uuid"};
    for (int m = 0; ok && m < D_MODES; m++) {
        PyObject *value = PyLong_FromLong(m);
        ok = value && PyDict_SetItemString(modes, mode_names[m], value) == 0;
        Py_XDECREF(value);
    }
    Py_INCREF(&ReaderType);
    if (!ok || PyModule_AddObject(module, "OPS", ops) < 0) {
        Py_XDECREF(ops);
        Py_XDECREF(modes);
        Py_DECREF(module);
        return NULL;
    }
    if (PyModule_AddObject(module, "DEFAULT_MODES", modes) < 0 ||
        PyModule_AddObject(module, "Reader", (PyObject *)&ReaderType) < 0 ||
        PyModule_AddStringConstant(module, "SOURCE_CRC32", KAFKACOMPAT_NATIVE_CRC32) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
