/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandbox spec: what a sandbox is made of. Parsed once at create, from JSON or from
 * flags; everything after that reads this struct and never re-parses. The whole spec comes
 * from a client and is untrusted until paddock_spec_validate() accepted it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "paddock/paddock.h"

#define PD_SPEC_MAX_JSON       (1u << 20) /* bytes of spec JSON accepted */
#define PD_SPEC_MAX_JSON_DEPTH 16
#define PD_SPEC_MAX_BINDS      64
#define PD_SPEC_MAX_ENV	       1024
#define PD_SPEC_MAX_ENV_BYTES  (128u << 10) /* all NAME=VALUE strings together */
#define PD_SPEC_MAX_PATH       1024
#define PD_SPEC_MAX_HOSTNAME   63
#define PD_SPEC_MAX_TIMEOUT_S  (30.0 * 24 * 3600)

enum pd_landlock_mode {
	PD_LANDLOCK_AUTO,     /* use it when the kernel has it; the result says when it did not */
	PD_LANDLOCK_REQUIRED, /* refuse to create the sandbox without it */
	_PD_LANDLOCK_MAX,
};

enum pd_net_mode {
	PD_NET_NONE,	  /* loopback only */
	PD_NET_ALLOWLIST, /* only what a rule allows, through the supervisor's proxy */
	PD_NET_OPEN,	  /* any public destination, through the proxy */
	_PD_NET_MAX,
};

/* What network.unlisted does with a destination no rule names (allowlist mode). */
enum pd_net_unlisted {
	PD_NET_UNLISTED_DENY, /* refused: the default */
	PD_NET_UNLISTED_ASK, /* held while a person is asked (docs/network.md, "Asking a person") */
	_PD_NET_UNLISTED_MAX,
};

/* Who commands run as (spec "user"). */
enum pd_user {
	PD_USER_USER, /* uid/gid 1000 "user": the default */
	PD_USER_ROOT, /* uid 0 of the sandbox's own user namespace (docs/images.md) */
	_PD_USER_MAX,
};

struct pd_bind {
	char *source; /* host path, absolute */
	char *target; /* sandbox path, absolute, normalised */
	bool readonly;
};

#define PD_SECRETS_MAX	    32
#define PD_SECRET_NAME_MAX  64
#define PD_SECRET_HOSTS_MAX 32
#define PD_SECRET_VALUE_MAX 8192

struct pd_spec_secret {
	char *name;	/* the variable the sandbox sees, holding the placeholder */
	char *source;	/* "env:VAR", "file:/path", or "value" (given directly) */
	uint8_t *value; /* source "value" only; never written out; wiped when freed */
	size_t value_len;
	char **hosts; /* names or "*.domain" the value may be sent to */
	size_t n_hosts;
	bool in_body; /* substitute in request bodies too */
};

struct paddock_spec {
	char *hostname; /* default "sandbox" */
	char *rootfs;	/* NULL: the host's /usr (+ /bin, /lib* links); else a directory tree */
	char *image;	/* NULL, or an image of the store (image-ref.h): its layers are the root */
	enum pd_user user;
	char *workspace; /* NULL: a private directory on the sandbox's own tmpfs */
	char *cwd;	 /* default "/workspace" */
	char **env;	 /* NULL-terminated "NAME=VALUE", names unique, in insertion order */
	size_t n_env;
	struct pd_bind *binds;
	size_t n_binds;
	struct {
		double timeout_s;    /* wall clock of the sandbox; default 86400 */
		uint64_t disk_bytes; /* writable layer + /tmp + home + private workspace; 1G */
		/* the rest: spec-limits.c holds their defaults and ranges */
		uint64_t memory_bytes;	  /* hard, no swap */
		uint64_t pids;		  /* processes and threads */
		double cpus;		  /* CPU quota, in CPUs */
		double cpu_time_s;	  /* CPU time of the whole sandbox */
		uint64_t file_size_bytes; /* largest file a command may write */
		uint64_t nofile;	  /* open files per process */
		uint64_t output_bytes;	  /* captured stdout + stderr */
		unsigned required;	  /* 1 << enum pd_limit: refuse to run unless enforced */
	} limits;
	struct {
		enum pd_landlock_mode landlock;
	} security;
	struct {
		enum pd_net_mode mode;
		char **allow; /* rules as written (egress-policy.h), "preset:NAME" too */
		size_t n_allow;
		char **deny;
		size_t n_deny;
		bool transparent;	  /* redirect all TCP/UDP to the proxy; default true */
		unsigned max_connections; /* concurrent proxied connections; default 256 */
		/* hosts no rule names: refused, or held while a person is asked (allowlist only) */
		enum pd_net_unlisted unlisted;
		double ask_timeout_s;	  /* how long a connection waits for the answer; 30 */
		unsigned ask_max_pending; /* destinations waiting for an answer at once; 8 */
	} network;
	struct pd_spec_secret *secrets; /* spec-secrets.c */
	size_t n_secrets;
	/*
	 * Set by the supervisor on its own copy for init, never loaded, written or copied:
	 * "NAME=placeholder" of each secret, and the certificate of the sandbox's CA.
	 */
	char **secret_env;
	char *ca_pem;
	/*
	 * Set by the supervisor on its own copy, like secret_env: the image's layer directories
	 * (bottom first, NULL-terminated) once "image" is resolved (image-store.h).
	 */
	char **image_layers;
	/* a pooled sandbox: init waits unconfined for PD_CTL_BIND (paddock_sandbox_claim()) */
	bool pooled;
	/*
	 * Set through include/paddock/oci.h (spec-oci.c), not JSON: an OCI bundle's root as
	 * directories stacked like an image's layers (bottom first, NULL-terminated), and a
	 * network namespace to join instead of a new one. Copied with the spec.
	 */
	char **root_layers;
	char *netns_path;
	bool root_readonly; /* the root itself read-only (its mounts keep their own flags) */
};

/* The limits, by the names the spec, the report and the API use. */
enum pd_limit {
	PD_LIMIT_MEMORY,
	PD_LIMIT_PIDS,
	PD_LIMIT_CPUS,
	PD_LIMIT_CPU_TIME,
	PD_LIMIT_TIMEOUT,
	PD_LIMIT_DISK,
	PD_LIMIT_FILE_SIZE,
	PD_LIMIT_NOFILE,
	PD_LIMIT_OUTPUT,
	_PD_LIMIT_MAX,
};

const char *pd_limit_to_string(enum pd_limit l); /* "memory", "cpu_time", ... */
int pd_limit_from_string(const char *s);	 /* -EINVAL when unknown */

/* The limits beyond timeout_s and disk (spec-limits.c), used by spec.c. */
void pd_spec_limits_defaults(paddock_spec *spec);
/* Loads limits.<name> (name is the JSON key) from v; -ENOENT when the name is not one of them. */
int pd_spec_limit_load(paddock_spec *spec, const char *name, json_t *v, const char *field,
		       paddock_error *err);
/* Sets limits.<name> from its string form; -ENOENT when the name is not one of them. */
int pd_spec_limit_set(paddock_spec *spec, const char *name, const char *value, const char *field,
		      paddock_error *err);
int pd_spec_limits_validate(const paddock_spec *spec, paddock_error *err);
/* Adds the limits beyond timeout_s and disk, and "required", to the limits object. */
int pd_spec_limits_to_json(const paddock_spec *spec, json_t *limits, paddock_error *err);

/* A size as the largest unit that divides it exactly ("1536M"), else a byte count. */
json_t *pd_spec_size_to_json(uint64_t bytes);

/* Deep copy. */
int pd_spec_dup(const paddock_spec *spec, paddock_spec **ret_copy, paddock_error *err);

const char *pd_landlock_mode_to_string(enum pd_landlock_mode m);
int pd_landlock_mode_from_string(const char *s); /* -EINVAL when unknown */
const char *pd_net_mode_to_string(enum pd_net_mode m);
const char *pd_user_to_string(enum pd_user u);
int pd_user_from_string(const char *s); /* -EINVAL when unknown */

/* The network section (spec-network.c). */
struct pd_egress_policy;
void pd_spec_network_defaults(paddock_spec *spec);
void pd_spec_network_clear(paddock_spec *spec);
int pd_spec_network_copy(paddock_spec *dst, const paddock_spec *src); /* -ENOMEM */
int pd_spec_network_load(paddock_spec *spec, json_t *v, const char *field, paddock_error *err);
/* network.<name> from its string form ("allow" and "deny" append); -ENOENT: unknown name. */
int pd_spec_network_set(paddock_spec *spec, const char *name, const char *value, const char *field,
			paddock_error *err);
int pd_spec_network_validate(const paddock_spec *spec, paddock_error *err);
/* The policy the proxy decides with; release it with pd_egress_policy_release(). */
int pd_spec_network_policy(const paddock_spec *spec, struct pd_egress_policy *ret,
			   paddock_error *err);
int pd_spec_network_to_json(const paddock_spec *spec, json_t *root, paddock_error *err);
/*
 * Appends one allow rule to network.allow (an answer "allow for this sandbox"), checked as
 * a rule given in the spec is. On error the spec is unchanged.
 */
int pd_spec_network_add_allow(paddock_spec *spec, const char *rule, paddock_error *err);
const char *pd_net_unlisted_to_string(enum pd_net_unlisted u);
int pd_net_unlisted_from_string(const char *s); /* -EINVAL when unknown */

/* The secrets (spec-secrets.c). */
void pd_spec_secrets_clear(paddock_spec *spec);
int pd_spec_secrets_copy(paddock_spec *dst, const paddock_spec *src); /* -ENOMEM */
int pd_spec_secrets_load(paddock_spec *spec, json_t *v, const char *field, paddock_error *err);
/* "NAME@host,...", "NAME=env:VAR@host", "NAME=file:/path@host": appends one. */
int pd_spec_secrets_set(paddock_spec *spec, const char *text, const char *field,
			paddock_error *err);
int pd_spec_secrets_validate(const paddock_spec *spec, paddock_error *err);
int pd_spec_secrets_to_json(const paddock_spec *spec, json_t *root, paddock_error *err);
/* Reads the real value of a secret (the supervisor's env or file, or the given value). */
int pd_spec_secret_value(const struct pd_spec_secret *s, const char *field, uint8_t **ret,
			 size_t *ret_len, paddock_error *err);
int pd_net_mode_from_string(const char *s);

/* The OCI runtime's fields (spec-oci.c): copy, clear, cross-field rules. */
int pd_spec_oci_copy(paddock_spec *dst, const paddock_spec *src); /* -ENOMEM */
void pd_spec_oci_clear(paddock_spec *spec);
int pd_spec_oci_validate(const paddock_spec *spec, paddock_error *err);

/*
 * "512M", "1G", "4096", "1.5G": binary units K M G T (1024-based), optional trailing "B"
 * or "iB". Rejects negatives, overflow, trailing garbage. -EINVAL on bad input.
 */
int pd_parse_size(const char *s, uint64_t *ret);
/* Seconds as a decimal number, "2", "0.5"; > 0 and finite. -EINVAL on bad input. */
int pd_parse_seconds(const char *s, double *ret);

/* ---- shared by spec.c and spec-json.c (defined in spec.c) ---------------------------- */
#define PD_SPEC_FIELD_MAX    64 /* paddock_error's field */
#define PD_SPEC_ENV_NAME_MAX 255
/* Sets a field from its string form; field names it in errors. */
typedef int (*pd_spec_set_fn)(paddock_spec *spec, const char *field, const char *value,
			      paddock_error *err);
int pd_spec_oom(paddock_error *err);
bool pd_spec_streq(const char *a, const char *b);
bool pd_spec_utf8_valid(const char *s);
const char *pd_spec_field_join(char buf[static PD_SPEC_FIELD_MAX], const char *prefix,
			       const char *key);
int pd_spec_assign_path(char **slot, const char *field, const char *path, bool normalize,
			paddock_error *err);
int pd_spec_set_rootfs(paddock_spec *spec, const char *field, const char *value,
		       paddock_error *err);
int pd_spec_set_image(paddock_spec *spec, const char *field, const char *value, paddock_error *err);
int pd_spec_set_user(paddock_spec *spec, const char *field, const char *value, paddock_error *err);
int pd_spec_set_workspace(paddock_spec *spec, const char *field, const char *value,
			  paddock_error *err);
int pd_spec_set_cwd(paddock_spec *spec, const char *field, const char *value, paddock_error *err);
int pd_spec_set_hostname(paddock_spec *spec, const char *field, const char *s, paddock_error *err);
int pd_spec_check_timeout(const char *field, double t, paddock_error *err);
int pd_spec_check_disk(const char *field, uint64_t bytes, paddock_error *err);
int pd_spec_set_landlock(paddock_spec *spec, const char *field, const char *s, paddock_error *err);
int pd_spec_check_env_name(const char *name, size_t len, paddock_error *err);
int pd_spec_env_put(paddock_spec *spec, char **entry, paddock_error *err);
void pd_spec_env_clear(paddock_spec *spec);
int pd_spec_bind_add(paddock_spec *spec, const char *source, const char *target, bool readonly,
		     paddock_error *err);
void pd_spec_binds_clear(paddock_spec *spec);
