/* limit: the one table of per-run limits.
 *
 * Every limit a sandbox enforces is one row of LIMITS below: its field in
 * struct limits, its keys in the configuration, the request and the job,
 * its unit, its range and its defaults.  The configuration parser, request
 * validation (sbx-validate), job writing and loading (sbx-run), the compile
 * cache's key and the backends' reports all walk this table; adding a limit
 * is one row here plus its enforcement in the backends.
 *
 * Units: a limit is held as a number in its base unit (milliseconds,
 * bytes, a count, CPUs).  Each unit says how it is written: in the
 * configuration a duration ("500ms", 10), a size ("256m"), an integer or a
 * number; in a request seconds, a size or byte count, an integer or a
 * number; in a job always a plain JSON number of the base unit.
 *
 * Columns: field, unit, configuration key, job key, request key (NULL: not
 * a request's to set), minimum, maximum, default, the default of its
 * ceiling max_KEY (requestable limits only), the default of its compile
 * stage's compile_KEY (0: the compile stage takes the run's value).
 *
 * The egress_ rows bound what a run with an allow-list (its `network`, or
 * an install's registries) moves through its proxy (egress.h): bytes both
 * ways, connections, and bytes per second over all of them (0: no bound).
 */
#ifndef SBX_LIMIT_H
#define SBX_LIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jv.h>

#define LIM_KIB 1024.0
#define LIM_MIB (1024.0 * 1024)
#define LIM_GIB (1024.0 * 1024 * 1024)
#define LIM_TIB (LIM_GIB * 1024)

enum lim_unit { LU_MS, LU_BYTES, LU_COUNT, LU_CPUS };

#define LIMITS(X) \
	X(timeout_ms, LU_MS,    "timeout",      "timeout_ms",    "timeout", 1,            86400e3,       10e3,          60e3,     30e3) \
	X(memory,     LU_BYTES, "memory",       "memory_bytes",  "memory",  4 * LIM_MIB,  LIM_TIB,       256 * LIM_MIB, LIM_GIB,  LIM_GIB) \
	X(cpus,       LU_CPUS,  "cpus",         "cpus",          "cpus",    0.01,         1024,          0.5,           2,        1) \
	X(pids,       LU_COUNT, "pids",         "pids",          "pids",    2,            1 << 22,       64,            256,      128) \
	X(output,     LU_BYTES, "output_limit", "output_bytes",  NULL,      0,            256 * LIM_MIB, 100 * LIM_KIB, 0,        0) \
	X(file_size,  LU_BYTES, "file_size",    "file_bytes",    NULL,      0,            LIM_TIB,       64 * LIM_MIB,  0,        0) \
	X(tmpfs,      LU_BYTES, "tmpfs_size",   "tmpfs_bytes",   NULL,      64 * LIM_KIB, LIM_TIB,       64 * LIM_MIB,  0,        0) \
	X(scratch,    LU_BYTES, "scratch_size", "scratch_bytes", NULL,      64 * LIM_KIB, LIM_TIB,       64 * LIM_MIB,  0,        0) \
	X(nofile,     LU_COUNT, "nofile",       "nofile",        NULL,      16,           1 << 20,       1024,          0,        0) \
	X(stack,      LU_BYTES, "stack",        "stack_bytes",   NULL,      64 * LIM_KIB, 4 * LIM_GIB,   8 * LIM_MIB,   0,        0) \
	X(egress_bytes, LU_BYTES, "egress_bytes", "egress_bytes", NULL,   0,            LIM_TIB,       LIM_GIB,       0,        0) \
	X(egress_conns, LU_COUNT, "egress_connections", "egress_connections", NULL, 0,  4096,          256,           0,        0) \
	X(egress_rate, LU_BYTES, "egress_rate", "egress_rate_bytes", NULL,   0,            LIM_TIB,       0,             0,        0)

enum lim_id {
#define LIM_ENUM(f, ...) LIM_##f,
	LIMITS(LIM_ENUM)
#undef LIM_ENUM
	LIM_N
};

/* cpus is the one fractional limit; the rest are whole numbers. */
#define LIM_T_LU_MS uint64_t
#define LIM_T_LU_BYTES uint64_t
#define LIM_T_LU_COUNT uint64_t
#define LIM_T_LU_CPUS double
struct limits {
#define LIM_FIELD(f, u, ...) LIM_T_##u f;
	LIMITS(LIM_FIELD)
#undef LIM_FIELD
};

struct limit_def {
	const char *field, *conf, *job, *req;
	enum lim_unit unit;
	double min, max, dflt, ceiling, compile;
	size_t off;
};

extern const struct limit_def limit_defs[LIM_N];

double limit_get(const struct limits *l, int i);
void limit_set(struct limits *l, int i, double v);
/* The built-in defaults: run, compile stage, ceilings. */
void limits_defaults(struct limits *run, struct limits *compile, struct limits *ceiling);
/* v in the limit's unit for people: "10 s", "256 MiB", "0.5", "64". */
const char *limit_str(int i, double v, char *buf, size_t len);

/* A request's value for limit i (requestable only): true with *out set, or
 * false with the reason in err ("\"timeout\" must be a number of seconds,
 * got string").  Absent or null: true, *out untouched. */
bool limit_from_request(int i, jv v, double *out, char *err, size_t errlen);

/* The job's "limits" object and back.  limits_from_json refuses a missing
 * field, a non-number, a fraction where a whole number is due, or a value
 * outside the table's range, naming `what` ("limits.memory_bytes ..."). */
jv limits_to_json(const struct limits *l);
bool limits_from_json(jv o, const char *what, struct limits *l, char *err, size_t errlen);

#endif
