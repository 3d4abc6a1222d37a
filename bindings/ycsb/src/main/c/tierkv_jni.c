// SPDX-License-Identifier: Apache-2.0
/*
 * tierkv_jni.c -- the JNI glue of the YCSB binding: the native methods of
 * site.ycsb.db.Tierkv over tierkv's public C API (include/tierkv.h).
 *
 * Built by the top-level Makefile as build/libtierkvjni.so, statically linked
 * with build/libtierkv.a and exporting nothing but JNI_OnLoad and the Java_*
 * entry points (bindings/ycsb/src/main/c/jni.map), so none of tierkv's
 * internal names can meet another native library's in the same JVM.
 *
 * Rules:
 *  - Never exit or abort the JVM. A failing tierkv call throws
 *    site.ycsb.db.TierkvException(status, "<call>: <tkv_strerror> (<tkv_errmsg>)");
 *    a closed (0) handle throws IllegalStateException, a null array
 *    NullPointerException. A JNI allocation that fails leaves its
 *    OutOfMemoryError pending and the function returns at once.
 *  - Keys and values are copied out of the Java arrays (GetByteArrayRegion),
 *    never pinned across a tierkv call: a put may wait (the write controller
 *    paces writers), and a pinned array would hold up the garbage collector.
 *  - Values read are copied into new Java arrays and the tierkv buffer freed
 *    before returning.
 */
#include <dlfcn.h>
#include <jni.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tierkv.h"

/* The native methods of site.ycsb.db.Tierkv (what `javac -h` would declare). */
JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved);
JNIEXPORT jlong JNICALL Java_site_ycsb_db_Tierkv_open(JNIEnv *, jclass, jstring, jobjectArray, jobjectArray);
JNIEXPORT void JNICALL Java_site_ycsb_db_Tierkv_close(JNIEnv *, jclass, jlong);
JNIEXPORT jbyteArray JNICALL Java_site_ycsb_db_Tierkv_get(JNIEnv *, jclass, jlong, jbyteArray);
JNIEXPORT void JNICALL Java_site_ycsb_db_Tierkv_put(JNIEnv *, jclass, jlong, jbyteArray, jbyteArray);
JNIEXPORT void JNICALL Java_site_ycsb_db_Tierkv_delete(JNIEnv *, jclass, jlong, jbyteArray);
JNIEXPORT jint JNICALL Java_site_ycsb_db_Tierkv_scan(JNIEnv *, jclass, jlong, jbyteArray, jobjectArray, jobjectArray);
JNIEXPORT jstring JNICALL Java_site_ycsb_db_Tierkv_property(JNIEnv *, jclass, jlong, jstring);
JNIEXPORT jint JNICALL Java_site_ycsb_db_Tierkv_version(JNIEnv *, jclass);
JNIEXPORT jobjectArray JNICALL Java_site_ycsb_db_Tierkv_mallocOwners(JNIEnv *, jclass);
JNIEXPORT jlong JNICALL Java_site_ycsb_db_Tierkv_loopGet(JNIEnv *, jclass, jlong, jbyteArray, jint, jint);
JNIEXPORT jlong JNICALL Java_site_ycsb_db_Tierkv_loopPut(JNIEnv *, jclass, jlong, jbyteArray, jint, jbyteArray, jint);

/* site/ycsb/db/TierkvException and its (int, String) constructor. */
static jclass exc_class;
static jmethodID exc_init;

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved)
{
    (void)reserved;
    JNIEnv *env;
    if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
    jclass c = (*env)->FindClass(env, "site/ycsb/db/TierkvException");
    if (!c) return JNI_ERR;
    exc_class = (*env)->NewGlobalRef(env, c);
    (*env)->DeleteLocalRef(env, c);
    if (!exc_class) return JNI_ERR;
    exc_init = (*env)->GetMethodID(env, exc_class, "<init>", "(ILjava/lang/String;)V");
    return exc_init ? JNI_VERSION_1_8 : JNI_ERR;
}

/* throw_plain -- throws a new `cls` (a JDK exception class) with message msg. */
static void throw_plain(JNIEnv *env, const char *cls, const char *msg)
{
    jclass c = (*env)->FindClass(env, cls);
    if (c) (*env)->ThrowNew(env, c, msg);
}

/* throw_tkv -- throws TierkvException(rc, "<what>: <strerror> (<errmsg>)"),
 * with tierkv's message of this thread's last error. */
static void throw_tkv(JNIEnv *env, int rc, const char *what)
{
    char msg[1024];
    const char *detail = tkv_errmsg();
    if (detail && *detail) snprintf(msg, sizeof msg, "%s: %s (%s)", what, tkv_strerror(rc), detail);
    else snprintf(msg, sizeof msg, "%s: %s", what, tkv_strerror(rc));
    jstring s = (*env)->NewStringUTF(env, msg);
    if (!s) return; /* OutOfMemoryError pending */
    jthrowable t = (*env)->NewObject(env, exc_class, exc_init, (jint)rc, s);
    if (t) (*env)->Throw(env, t);
}

/* db_of -- the handle, or NULL with IllegalStateException thrown. */
static tkv_db *db_of(JNIEnv *env, jlong h)
{
    if (h == 0) throw_plain(env, "java/lang/IllegalStateException", "tierkv: the database handle is closed");
    return (tkv_db *)(intptr_t)h;
}

/* A copy of a Java byte[]: in `small` when it fits, else malloc'd. */
typedef struct jbytes {
    jbyte *p;
    size_t n;
    jbyte small[2048];
} jbytes;

/* jbytes_get -- copies arr into b. 0, or -1 with an exception pending. */
static int jbytes_get(JNIEnv *env, jbyteArray arr, jbytes *b, const char *what)
{
    if (!arr) {
        throw_plain(env, "java/lang/NullPointerException", what);
        return -1;
    }
    jsize n = (*env)->GetArrayLength(env, arr);
    b->n = (size_t)n;
    b->p = b->small;
    if (b->n > sizeof b->small && !(b->p = malloc(b->n))) {
        throw_plain(env, "java/lang/OutOfMemoryError", "tierkv: copying a key or value");
        return -1;
    }
    (*env)->GetByteArrayRegion(env, arr, 0, n, b->p);
    return 0;
}

static void jbytes_free(jbytes *b)
{
    if (b->p != b->small) free(b->p);
}

/* new_array -- a Java byte[] holding [p, p+n), or NULL (OutOfMemoryError pending). */
static jbyteArray new_array(JNIEnv *env, const void *p, size_t n)
{
    if (n > INT32_MAX) {
        throw_plain(env, "java/lang/OutOfMemoryError", "tierkv: value too large for a Java array");
        return NULL;
    }
    jbyteArray a = (*env)->NewByteArray(env, (jsize)n);
    if (a) (*env)->SetByteArrayRegion(env, a, 0, (jsize)n, (const jbyte *)p);
    return a;
}

/* set_options -- names[i]=values[i] into opts. 0, or -1 with an exception
 * pending (a rejected option: TierkvException naming it, with tierkv's reason). */
static int set_options(JNIEnv *env, tkv_options *opts, jobjectArray names, jobjectArray values)
{
    jsize n = names ? (*env)->GetArrayLength(env, names) : 0;
    if (n && (!values || (*env)->GetArrayLength(env, values) != n)) {
        throw_plain(env, "java/lang/IllegalArgumentException", "tierkv open: names and values differ in length");
        return -1;
    }
    for (jsize i = 0; i < n; i++) {
        jstring jn = (*env)->GetObjectArrayElement(env, names, i);
        jstring jv = (*env)->GetObjectArrayElement(env, values, i);
        const char *name = jn ? (*env)->GetStringUTFChars(env, jn, NULL) : NULL;
        const char *value = jv ? (*env)->GetStringUTFChars(env, jv, NULL) : NULL;
        int rc = TKV_OK;
        if (name && value) rc = tkv_options_set(opts, name, value);
        else if (!(*env)->ExceptionCheck(env))
            throw_plain(env, "java/lang/NullPointerException", "tierkv open: null option name or value");
        if (rc != TKV_OK) {
            char what[512];
            snprintf(what, sizeof what, "option %.200s=%.200s rejected by tkv_options_set", name, value);
            throw_tkv(env, rc, what);
        }
        if (name) (*env)->ReleaseStringUTFChars(env, jn, name);
        if (value) (*env)->ReleaseStringUTFChars(env, jv, value);
        (*env)->DeleteLocalRef(env, jn);
        (*env)->DeleteLocalRef(env, jv);
        if ((*env)->ExceptionCheck(env)) return -1;
    }
    return 0;
}

/* open(dir, names, values): the handle of the database in dir, opened with
 * tkv_options_set(names[i], values[i]) applied in order. */
JNIEXPORT jlong JNICALL Java_site_ycsb_db_Tierkv_open(JNIEnv *env, jclass cls, jstring jdir, jobjectArray names,
                                                      jobjectArray values)
{
    (void)cls;
    if (!jdir) {
        throw_plain(env, "java/lang/NullPointerException", "tierkv open: null directory");
        return 0;
    }
    tkv_options *opts = tkv_options_new();
    if (!opts) {
        throw_tkv(env, TKV_NO_MEMORY, "tkv_options_new");
        return 0;
    }
    tkv_db *db = NULL;
    if (set_options(env, opts, names, values) == 0) {
        const char *dir = (*env)->GetStringUTFChars(env, jdir, NULL);
        if (dir) {
            int rc = tkv_open(dir, opts, &db);
            if (rc != TKV_OK) {
                char what[512];
                snprintf(what, sizeof what, "tkv_open %.400s", dir);
                throw_tkv(env, rc, what);
            }
            (*env)->ReleaseStringUTFChars(env, jdir, dir);
        }
    }
    tkv_options_free(opts);
    return (jlong)(intptr_t)db;
}

/* close(h): tkv_close; the handle is gone afterwards even when it throws. */
JNIEXPORT void JNICALL Java_site_ycsb_db_Tierkv_close(JNIEnv *env, jclass cls, jlong h)
{
    (void)cls;
    tkv_db *db = db_of(env, h);
    if (!db) return;
    int rc = tkv_close(db);
    if (rc != TKV_OK) throw_tkv(env, rc, "tkv_close");
}

/* get(h, key): the value, or null when the key is absent. */
JNIEXPORT jbyteArray JNICALL Java_site_ycsb_db_Tierkv_get(JNIEnv *env, jclass cls, jlong h, jbyteArray jkey)
{
    (void)cls;
    tkv_db *db = db_of(env, h);
    jbytes k;
    if (!db || jbytes_get(env, jkey, &k, "tierkv get: null key") < 0) return NULL;
    void *val = NULL;
    size_t vlen = 0;
    int rc = tkv_get(db, NULL, k.p, k.n, &val, &vlen);
    jbytes_free(&k);
    if (rc == TKV_NOT_FOUND) return NULL;
    if (rc != TKV_OK) {
        throw_tkv(env, rc, "tkv_get");
        return NULL;
    }
    jbyteArray a = new_array(env, val, vlen);
    tkv_free(val);
    return a;
}

/* put(h, key, value): tkv_put without TKV_SYNC (the options' wal/sync apply). */
JNIEXPORT void JNICALL Java_site_ycsb_db_Tierkv_put(JNIEnv *env, jclass cls, jlong h, jbyteArray jkey, jbyteArray jval)
{
    (void)cls;
    tkv_db *db = db_of(env, h);
    jbytes k, v;
    if (!db || jbytes_get(env, jkey, &k, "tierkv put: null key") < 0) return;
    if (jbytes_get(env, jval, &v, "tierkv put: null value") < 0) {
        jbytes_free(&k);
        return;
    }
    int rc = tkv_put(db, k.p, k.n, v.p, v.n, 0);
    jbytes_free(&k);
    jbytes_free(&v);
    if (rc != TKV_OK) throw_tkv(env, rc, "tkv_put");
}

/* delete(h, key): tkv_delete (a no-op for an absent key). */
JNIEXPORT void JNICALL Java_site_ycsb_db_Tierkv_delete(JNIEnv *env, jclass cls, jlong h, jbyteArray jkey)
{
    (void)cls;
    tkv_db *db = db_of(env, h);
    jbytes k;
    if (!db || jbytes_get(env, jkey, &k, "tierkv delete: null key") < 0) return;
    int rc = tkv_delete(db, k.p, k.n, 0);
    jbytes_free(&k);
    if (rc != TKV_OK) throw_tkv(env, rc, "tkv_delete");
}

/* store -- out[i] = a copy of [p, p+n). 0, or -1 with an exception pending. */
static int store(JNIEnv *env, jobjectArray out, jsize i, const void *p, size_t n)
{
    jbyteArray a = new_array(env, p, n);
    if (!a) return -1;
    (*env)->SetObjectArrayElement(env, out, i, a);
    (*env)->DeleteLocalRef(env, a); /* a scan may return more entries than the local frame holds */
    return (*env)->ExceptionCheck(env) ? -1 : 0;
}

/* scan(h, start, keys, values): the entries from the first key >= start, in
 * key order, into values[0..n) (and keys[0..n) when keys is not null), at
 * most values.length of them; returns n. */
JNIEXPORT jint JNICALL Java_site_ycsb_db_Tierkv_scan(JNIEnv *env, jclass cls, jlong h, jbyteArray jstart,
                                                     jobjectArray keys, jobjectArray values)
{
    (void)cls;
    tkv_db *db = db_of(env, h);
    if (!db) return 0;
    if (!values) {
        throw_plain(env, "java/lang/NullPointerException", "tierkv scan: null values array");
        return 0;
    }
    jsize max = (*env)->GetArrayLength(env, values);
    if (keys && (*env)->GetArrayLength(env, keys) < max) {
        throw_plain(env, "java/lang/IllegalArgumentException", "tierkv scan: keys array shorter than values");
        return 0;
    }
    jbytes s;
    if (jbytes_get(env, jstart, &s, "tierkv scan: null start key") < 0) return 0;
    tkv_iter *it = NULL;
    int rc = tkv_iter_new(db, NULL, &it);
    jsize n = 0;
    if (rc == TKV_OK) {
        for (tkv_iter_seek(it, s.p, s.n); n < max && tkv_iter_valid(it); tkv_iter_next(it), n++) {
            size_t kl, vl;
            const void *k = tkv_iter_key(it, &kl), *v = tkv_iter_value(it, &vl);
            if ((keys && store(env, keys, n, k, kl) < 0) || store(env, values, n, v, vl) < 0) break;
        }
        rc = tkv_iter_status(it);
        tkv_iter_free(it);
    }
    jbytes_free(&s);
    if (!(*env)->ExceptionCheck(env) && rc != TKV_OK) throw_tkv(env, rc, "tkv_iter");
    return n;
}

/* property(h, name): tkv_property's text, or null for an unknown name. */
JNIEXPORT jstring JNICALL Java_site_ycsb_db_Tierkv_property(JNIEnv *env, jclass cls, jlong h, jstring jname)
{
    (void)cls;
    tkv_db *db = db_of(env, h);
    if (!db) return NULL;
    if (!jname) {
        throw_plain(env, "java/lang/NullPointerException", "tierkv property: null name");
        return NULL;
    }
    const char *name = (*env)->GetStringUTFChars(env, jname, NULL);
    if (!name) return NULL;
    char *text = tkv_property(db, name);
    (*env)->ReleaseStringUTFChars(env, jname, name);
    if (!text) return NULL;
    jstring s = (*env)->NewStringUTF(env, text);
    tkv_free(text);
    return s;
}

/* version(): tkv_version() of the linked library (major*10000+minor*100+patch). */
JNIEXPORT jint JNICALL Java_site_ycsb_db_Tierkv_version(JNIEnv *env, jclass cls)
{
    (void)env;
    (void)cls;
    return tkv_version();
}

/* owner_of -- the file of the object that defines address p, or "?". */
static const char *owner_of(void *p)
{
    Dl_info info;
    return p && dladdr(p, &info) && info.dli_fname ? info.dli_fname : "?";
}

/* mallocOwners(): {the object whose malloc the process's global scope binds
 * (what the JVM and every library loaded before us call), the object whose
 * malloc this glue and tierkv call}. A test checks that loading the glue
 * leaves the first one libc's. */
JNIEXPORT jobjectArray JNICALL Java_site_ycsb_db_Tierkv_mallocOwners(JNIEnv *env, jclass cls)
{
    (void)cls;
    void *(*mine)(size_t) = malloc;
    const char *names[2] = {owner_of(dlsym(RTLD_DEFAULT, "malloc")), owner_of((void *)(uintptr_t)mine)};
    jclass sc = (*env)->FindClass(env, "java/lang/String");
    if (!sc) return NULL;
    jobjectArray out = (*env)->NewObjectArray(env, 2, sc, NULL);
    for (jsize i = 0; out && i < 2; i++) {
        jstring s = (*env)->NewStringUTF(env, names[i]);
        if (!s) return NULL;
        (*env)->SetObjectArrayElement(env, out, i, s);
        (*env)->DeleteLocalRef(env, s);
    }
    return out;
}

/* loopGet(h, keys, klen, n): n tkv_get calls from C (and tkv_free of each
 * value), over the keys of klen bytes packed in keys, round robin, with no
 * JVM crossing per call: the baseline BindingCost sets the JNI path against.
 * Returns the bytes read, or -1 with an exception pending. */
JNIEXPORT jlong JNICALL Java_site_ycsb_db_Tierkv_loopGet(JNIEnv *env, jclass cls, jlong h, jbyteArray jkeys, jint klen,
                                                         jint n)
{
    (void)cls;
    tkv_db *db = db_of(env, h);
    jbytes k;
    if (!db || jbytes_get(env, jkeys, &k, "tierkv loopGet: null keys") < 0) return -1;
    size_t nkeys = klen > 0 ? k.n / (size_t)klen : 0;
    long long bytes = 0;
    for (jint i = 0; nkeys && i < n; i++) {
        void *val;
        size_t vlen;
        int rc = tkv_get(db, NULL, k.p + (size_t)i % nkeys * (size_t)klen, (size_t)klen, &val, &vlen);
        if (rc == TKV_OK) {
            bytes += (long long)vlen;
            tkv_free(val);
        } else if (rc != TKV_NOT_FOUND) {
            throw_tkv(env, rc, "tkv_get");
            break;
        }
    }
    jbytes_free(&k);
    return (*env)->ExceptionCheck(env) ? -1 : (jlong)bytes;
}

/* loopPut(h, keys, klen, value, n): n tkv_put calls from C of one value over
 * the packed keys, round robin. Returns n, or -1 with an exception pending. */
JNIEXPORT jlong JNICALL Java_site_ycsb_db_Tierkv_loopPut(JNIEnv *env, jclass cls, jlong h, jbyteArray jkeys, jint klen,
                                                         jbyteArray jval, jint n)
{
    (void)cls;
    tkv_db *db = db_of(env, h);
    jbytes k, v;
    if (!db || jbytes_get(env, jkeys, &k, "tierkv loopPut: null keys") < 0) return -1;
    if (jbytes_get(env, jval, &v, "tierkv loopPut: null value") < 0) {
        jbytes_free(&k);
        return -1;
    }
    size_t nkeys = klen > 0 ? k.n / (size_t)klen : 0;
    for (jint i = 0; nkeys && i < n; i++) {
        int rc = tkv_put(db, k.p + (size_t)i % nkeys * (size_t)klen, (size_t)klen, v.p, v.n, 0);
        if (rc != TKV_OK) {
            throw_tkv(env, rc, "tkv_put");
            break;
        }
    }
    jbytes_free(&k);
    jbytes_free(&v);
    return (*env)->ExceptionCheck(env) ? -1 : (jlong)n;
}
