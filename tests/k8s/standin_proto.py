# standin_proto.py - the protobuf bodies the stand-in (standin.py) reads:
# a v1 Secret or Namespace, which kubectl 1.32's "create secret" and
# "create namespace" send as application/vnd.kubernetes.protobuf
# whatever the server (of a Namespace, its metadata only).  The envelope
# is "k8s\0" and a runtime.Unknown (typeMeta 1 {apiVersion 1, kind 2},
# raw 2); the Secret is metadata 1, data 2 (map string->bytes), type 3,
# stringData 4, immutable 5; of ObjectMeta, name 1, generateName 2,
# namespace 3, labels 11 and annotations 12 (generated.proto of
# k8s.io/api core/v1 and apimachinery meta/v1).  Anything else is not
# read: the caller answers 415.
import base64

MAGIC = b"k8s\x00"


def _varint(buf, i):
    n = shift = 0
    while True:
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n, i
        shift += 7


def fields(buf):
    """(field number, value) of a message: ints for varints, bytes for
    length-delimited fields."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            val, i = _varint(buf, i)
        elif wire == 2:
            n, i = _varint(buf, i)
            val, i = buf[i:i + n], i + n
        elif wire == 1:
            val, i = buf[i:i + 8], i + 8
        elif wire == 5:
            val, i = buf[i:i + 4], i + 4
        else:
            raise ValueError("protobuf wire type %d" % wire)
        yield num, val


def _entry(buf):
    d = dict(fields(buf))
    return d.get(1, b"").decode(), d.get(2, b"")


def _meta(buf):
    meta, names = {}, {1: "name", 2: "generateName", 3: "namespace"}
    for num, val in fields(buf):
        if num in names and val:
            meta[names[num]] = val.decode()
        elif num in (11, 12):
            k, v = _entry(val)
            meta.setdefault("labels" if num == 11 else "annotations",
                            {})[k] = v.decode()
    return meta


def decode(body):
    """The object a protobuf body holds, as JSON would give it; None if
    it is not one the stand-in reads."""
    if not body.startswith(MAGIC):
        return None
    unknown = dict(fields(body[len(MAGIC):]))
    tm = dict(fields(unknown.get(1, b"")))
    if tm.get(1) != b"v1" or tm.get(2) not in (b"Secret", b"Namespace"):
        return None
    kind = tm[2].decode()
    obj = {"apiVersion": "v1", "kind": kind, "metadata": {}}
    for num, val in fields(unknown.get(2, b"")):
        if num == 1:
            obj["metadata"] = _meta(val)
        elif kind != "Secret":
            continue
        elif num == 2:
            k, v = _entry(val)
            obj.setdefault("data", {})[k] = base64.b64encode(v).decode()
        elif num == 3:
            obj["type"] = val.decode()
        elif num == 4:
            k, v = _entry(val)
            obj.setdefault("stringData", {})[k] = v.decode()
        elif num == 5:
            obj["immutable"] = bool(val)
    return obj
