/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The compute limits of a spec: one table gives each limit its kind, range and default, and
 * one set of functions loads, sets, checks and writes them all. Every limit has a finite
 * default (docs/spec.md); there is no "unlimited". timeout_s and disk predate the table and
 * stay in spec.c.
 */
#include "spec.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "util/cleanup.h"

enum kind {
	KIND_SIZE,    /* bytes: "512M" or an integer */
	KIND_COUNT,   /* an integer */
	KIND_SECONDS, /* a positive number */
	KIND_CPUS,    /* a positive number of CPUs */
};

struct limit_desc {
	enum pd_limit id;
	const char *name;
	enum kind kind;
	size_t offset; /* in paddock_spec */
	double min, max, def;
	const char *example;
};

#define U(f) offsetof(struct paddock_spec, limits.f)
#define MiB  (1024.0 * 1024.0)
#define GiB  (1024.0 * MiB)

static const struct limit_desc limits[] = {
	{ PD_LIMIT_MEMORY, "memory", KIND_SIZE, U(memory_bytes), 4 * MiB, 1024 * GiB, 1 * GiB,
	  "'512M' or '2G'" },
	{ PD_LIMIT_PIDS, "pids", KIND_COUNT, U(pids), 1, 4194304, 512, "64" },
	{ PD_LIMIT_CPUS, "cpus", KIND_CPUS, U(cpus), 0.01, 1024, 2, "0.5 or 2" },
	{ PD_LIMIT_CPU_TIME, "cpu_time_s", KIND_SECONDS, U(cpu_time_s), 0.01, 30 * 86400.0, 3600,
	  "60" },
	{ PD_LIMIT_FILE_SIZE, "file_size", KIND_SIZE, U(file_size_bytes), 1, 1024 * GiB, 1 * GiB,
	  "'100M'" },
	{ PD_LIMIT_NOFILE, "nofile", KIND_COUNT, U(nofile), 16, 1048576, 1024, "1024" },
	{ PD_LIMIT_OUTPUT, "output", KIND_SIZE, U(output_bytes), 1024, 64 * GiB, 16 * MiB, "'1M'" },
};

static const char *const limit_names[_PD_LIMIT_MAX] = {
	[PD_LIMIT_MEMORY] = "memory",	    [PD_LIMIT_PIDS] = "pids",
	[PD_LIMIT_CPUS] = "cpus",	    [PD_LIMIT_CPU_TIME] = "cpu_time",
	[PD_LIMIT_TIMEOUT] = "timeout",	    [PD_LIMIT_DISK] = "disk",
	[PD_LIMIT_FILE_SIZE] = "file_size", [PD_LIMIT_NOFILE] = "nofile",
	[PD_LIMIT_OUTPUT] = "output",
};

const char *pd_limit_to_string(enum pd_limit l)
{
	return (unsigned)l < _PD_LIMIT_MAX ? limit_names[l] : NULL;
}

int pd_limit_from_string(const char *s)
{
	for (int i = 0; s && i < _PD_LIMIT_MAX; i++)
		if (!strcmp(limit_names[i], s))
			return i;
	return -EINVAL;
}

static const struct limit_desc *find(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(limits); i++)
		if (!strcmp(limits[i].name, name))
			return &limits[i];
	return NULL;
}

static void *slot(paddock_spec *spec, const struct limit_desc *d)
{
	return (char *)spec + d->offset;
}

static const void *cslot(const paddock_spec *spec, const struct limit_desc *d)
{
	return (const char *)spec + d->offset;
}

static bool is_float(const struct limit_desc *d)
{
	return d->kind == KIND_SECONDS || d->kind == KIND_CPUS;
}

static int check(const struct limit_desc *d, double v, const char *field, paddock_error *err)
{
	/* written so that NaN fails too */
	if (!(v >= d->min && v <= d->max)) {
		if (d->kind == KIND_SIZE)
			return pd_fail_field(err, EINVAL, field,
					     "expected a size from %.0f to %.0f bytes, got %.0f",
					     d->min, d->max, v);
		return pd_fail_field(err, EINVAL, field, "expected a number from %g to %g, got %g",
				     d->min, d->max, v);
	}
	return 0;
}

static int store(paddock_spec *spec, const struct limit_desc *d, double fv, uint64_t uv,
		 const char *field, paddock_error *err)
{
	int r = check(d, is_float(d) ? fv : (double)uv, field, err);

	if (r < 0)
		return r;
	if (is_float(d))
		*(double *)slot(spec, d) = fv;
	else
		*(uint64_t *)slot(spec, d) = uv;
	return 0;
}

static int expected(const struct limit_desc *d, const char *field, const char *got,
		    paddock_error *err)
{
	static const char *const what[] = {
		[KIND_SIZE] = "a size such as",
		[KIND_COUNT] = "a whole number such as",
		[KIND_SECONDS] = "seconds such as",
		[KIND_CPUS] = "a number of CPUs such as",
	};
	return pd_fail_field(err, EINVAL, field, "expected %s %s, got %s", what[d->kind],
			     d->example, got);
}

static int load_required(paddock_spec *spec, json_t *v, const char *field, paddock_error *err)
{
	unsigned mask = 0;
	size_t i;
	json_t *m;

	if (!json_is_array(v))
		return pd_fail_field(err, EINVAL, field, "expected an array of limit names");
	json_array_foreach(v, i, m)
	{
		const char *s = json_string_value(m);
		int l = s && strlen(s) == json_string_length(m) ? pd_limit_from_string(s) : -EINVAL;

		if (l < 0)
			return pd_fail_field(err, EINVAL, field,
					     "expected limit names (memory, pids, cpus, cpu_time, "
					     "timeout, disk, file_size, nofile, output), got '%s' "
					     "at index %zu",
					     s ? PD_ESC(s) : "(not a string)", i);
		mask |= 1u << l;
	}
	spec->limits.required = mask;
	return 0;
}

int pd_spec_limit_load(paddock_spec *spec, const char *name, json_t *v, const char *field,
		       paddock_error *err)
{
	const struct limit_desc *d;

	if (!strcmp(name, "required"))
		return load_required(spec, v, field, err);
	d = find(name);
	if (!d)
		return -ENOENT;
	if (d->kind == KIND_SIZE && json_is_string(v)) {
		uint64_t b;
		const char *s = json_string_value(v);

		if (strlen(s) != json_string_length(v) || pd_parse_size(s, &b) < 0)
			return expected(d, field, "a string that is not one", err);
		return store(spec, d, 0, b, field, err);
	}
	if (!is_float(d)) {
		json_int_t n;

		if (!json_is_integer(v))
			return expected(d, field, json_is_real(v) ? "a fraction" : "another type",
					err);
		n = json_integer_value(v);
		if (n < 0)
			return expected(d, field, "a negative number", err);
		return store(spec, d, 0, (uint64_t)n, field, err);
	}
	if (!json_is_number(v))
		return expected(d, field, "another type", err);
	return store(spec, d, json_number_value(v), 0, field, err);
}

int pd_spec_limit_set(paddock_spec *spec, const char *name, const char *value, const char *field,
		      paddock_error *err)
{
	const struct limit_desc *d = find(name);
	char got[160];

	if (!strcmp(name, "required")) {
		unsigned mask = 0;
		_cleanup_free_ char *copy = strdup(value);
		char *save = NULL;

		if (!copy)
			return pd_fail(err, ENOMEM, "copy limit names");
		for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			int l = pd_limit_from_string(t);
			if (l < 0)
				return pd_fail_field(
					err, EINVAL, field,
					"expected limit names separated by ',', got '%s'",
					PD_ESC(t));
			mask |= 1u << l;
		}
		spec->limits.required |= mask;
		return 0;
	}
	if (!d)
		return -ENOENT;
	snprintf(got, sizeof(got), "'%s'", PD_ESC(value));
	if (d->kind == KIND_SIZE) {
		uint64_t b;
		if (pd_parse_size(value, &b) < 0)
			return expected(d, field, got, err);
		return store(spec, d, 0, b, field, err);
	}
	if (d->kind == KIND_COUNT) {
		uint64_t n = 0;
		const char *p = value;

		if (!*p)
			return expected(d, field, got, err);
		for (; *p >= '0' && *p <= '9'; p++)
			if (__builtin_mul_overflow(n, 10, &n) ||
			    __builtin_add_overflow(n, (uint64_t)(*p - '0'), &n))
				return expected(d, field, got, err);
		if (*p)
			return expected(d, field, got, err);
		return store(spec, d, 0, n, field, err);
	}
	double v;
	int r = pd_parse_seconds(value, &v);
	if (r == -ENOMEM)
		return pd_fail(err, ENOMEM, "parse '%s'", field);
	if (r < 0)
		return expected(d, field, got, err);
	return store(spec, d, v, 0, field, err);
}

void pd_spec_limits_defaults(paddock_spec *spec)
{
	for (size_t i = 0; i < ELEMENTSOF(limits); i++) {
		if (is_float(&limits[i]))
			*(double *)slot(spec, &limits[i]) = limits[i].def;
		else
			*(uint64_t *)slot(spec, &limits[i]) = (uint64_t)limits[i].def;
	}
	spec->limits.required = 0;
}

int pd_spec_limits_validate(const paddock_spec *spec, paddock_error *err)
{
	for (size_t i = 0; i < ELEMENTSOF(limits); i++) {
		const struct limit_desc *d = &limits[i];
		char field[48];
		double v = is_float(d) ? *(const double *)cslot(spec, d)
				       : (double)*(const uint64_t *)cslot(spec, d);
		int r;

		snprintf(field, sizeof(field), "limits.%s", d->name);
		r = check(d, v, field, err);
		if (r < 0)
			return r;
	}
	if (spec->limits.required >> _PD_LIMIT_MAX)
		return pd_fail_field(err, EINVAL, "limits.required", "unknown limit in the mask");
	return 0;
}

/* Sizes as the largest exact unit ("512M"), like disk; others as numbers. */
static json_t *value_json(const struct limit_desc *d, const paddock_spec *spec)
{
	if (is_float(d)) {
		double v = *(const double *)cslot(spec, d);
		if (v <= d->max && (double)(json_int_t)v == v)
			return json_integer((json_int_t)v);
		return json_real(v);
	}
	uint64_t u = *(const uint64_t *)cslot(spec, d);
	return d->kind == KIND_SIZE ? pd_spec_size_to_json(u) : json_integer((json_int_t)u);
}

int pd_spec_limits_to_json(const paddock_spec *spec, json_t *obj, paddock_error *err)
{
	json_t *req;

	for (size_t i = 0; i < ELEMENTSOF(limits); i++)
		if (json_object_set_new(obj, limits[i].name, value_json(&limits[i], spec)) < 0)
			return pd_fail(err, ENOMEM, "write limits");
	req = json_array();
	if (!req)
		return pd_fail(err, ENOMEM, "write limits");
	for (int l = 0; l < _PD_LIMIT_MAX; l++)
		if (spec->limits.required & (1u << l))
			json_array_append_new(req, json_string(limit_names[l]));
	if (json_object_set_new(obj, "required", req) < 0)
		return pd_fail(err, ENOMEM, "write limits");
	return 0;
}

int paddock_spec_get_limit(const paddock_spec *spec, const char *name, double *ret_value,
			   paddock_error *err)
{
	const struct limit_desc *d;

	if (!spec || !name || !ret_value)
		return pd_fail(err, EINVAL, "paddock_spec_get_limit: arguments are required");
	if (!strcmp(name, "timeout")) {
		*ret_value = spec->limits.timeout_s;
		return 0;
	}
	if (!strcmp(name, "disk")) {
		*ret_value = (double)spec->limits.disk_bytes;
		return 0;
	}
	d = find(!strcmp(name, "cpu_time") ? "cpu_time_s" : name);
	if (!d)
		return pd_fail_field(err, EINVAL, "limits", "unknown limit '%s'", PD_ESC(name));
	*ret_value = is_float(d) ? *(const double *)cslot(spec, d)
				 : (double)*(const uint64_t *)cslot(spec, d);
	return 0;
}
