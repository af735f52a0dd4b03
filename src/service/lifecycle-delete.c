/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The end of paddockd's sandboxes: DELETE, TTL and idle expiry, adoption that failed,
 * shutdown with --destroy-on-exit. The row says "deleting" first, the box leaves the API's
 * view at once, init is killed and the kernel tears the sandbox down off the loop's time;
 * the row (and a DELETE's 204) go once nothing of it is left.
 */
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "service.h"
#include "lifecycle.h"

void svc_box_release_clients(struct box *b)
{
	svc_box_free_procs(b);
	if (b->d->hooks && b->d->hooks->release_clients)
		b->d->hooks->release_clients(b);
	if (b->d->box_gone)
		b->d->box_gone(b->d, b);
}

/* Unlinks a box and ends what clients hold of it: processes, file watches, event streams. */
void svc_box_unlink(struct box *b)
{
	for (struct box **pp = &b->d->boxes; *pp; pp = &(*pp)->next)
		if (*pp == b) {
			*pp = b->next;
			break;
		}
	svc_box_release_clients(b);
	if (b->d->hooks && b->d->hooks->box_unlinked)
		b->d->hooks->box_unlinked(b);
}

/*
 * The sandbox is gone: its row goes (it said "deleting" meanwhile, so a restart in between
 * finishes the teardown: finish_deleting()), and so does its reconnect socket, which
 * libpaddock removes only for a sandbox it still held (not one that had stopped before a
 * restart).
 */
void svc_box_forget(struct daemon *d, const char *id)
{
	paddock_error err = { 0 };
	char path[300];

	if (paddock_store_delete_sandbox(d->store, id, &err) < 0 && err.code != ENOENT)
		svc_store_warn(d, &err); /* the row stays "deleting": the next start finishes it */
	if (svc_socket_path(d, id, path, sizeof(path)))
		(void)unlink(path); /* ENOENT: libpaddock removed it */
}

static void box_free(struct box *b)
{
	if (b->sb)
		b->sb = paddock_sandbox_free(b->sb); /* init is gone: no wait */
	if (b->removed_reason[0]) {
		svc_box_forget(b->d, b->id);
		svc_box_forget_kept(b); /* its init is gone: no kept image is in use */
	}
	if (b->d->hooks && b->d->hooks->box_freed)
		b->d->hooks->box_freed(b);
	json_decref(b->metadata);
	free(b->spec_json);
	free(b);
}

static void dying_unlink(struct box *b)
{
	for (struct box **pp = &b->d->dying; *pp; pp = &(*pp)->next)
		if (*pp == b) {
			*pp = b->next;
			break;
		}
}

static void dead_cb(evutil_socket_t fd, short what, void *arg)
{
	struct box *b = arg;

	(void)fd;
	(void)what;
	dying_unlink(b);
	box_free(b);
}

/* init of a dying sandbox is gone: free it from the loop, not from its own callback */
static void box_dead(paddock_sandbox *sb, enum paddock_end_reason reason, void *userdata)
{
	struct box *b = userdata;
	struct timeval now = { 0 };

	(void)sb;
	(void)reason;
	if (event_base_once(b->d->base, -1, EV_TIMEOUT, dead_cb, b, &now) < 0) {
		dying_unlink(b);
		box_free(b); /* out of memory: the sandbox is dead anyway, so this is quick */
	}
}

int svc_box_delete(struct box *b, const char *reason, void *deleter, bool force, paddock_error *err)
{
	struct daemon *d = b->d;
	paddock_error cause = { 0 };

	/*
	 * First the record that it is going: a client told 204 must not find it again after a
	 * restart, and a restart in the middle of the teardown finishes it (finish_deleting()).
	 * When that cannot be written, a DELETE fails and changes nothing; TTL, idle and the
	 * like end the sandbox all the same (its row is then a sandbox that cannot be adopted).
	 */
	if (paddock_store_set_state(d->store, b->id, "deleting", &cause) < 0 &&
	    cause.code != ENOENT) {
		if (!force)
			return svc_store_error(err, &cause);
		svc_store_warn(d, &cause);
	}
	svc_box_unlink(b);
	if (strcmp(reason, "deleted") == 0)
		d->m.destroyed_by[0]++;
	else if (strcmp(reason, "ttl") == 0)
		d->m.destroyed_by[1]++;
	else if (strcmp(reason, "idle") == 0)
		d->m.destroyed_by[2]++;
	else
		d->m.destroyed_by[3]++;
	svc_log_event(d, b->tenant, "sandbox.removed", b->id, "\"reason\":\"%s\"", reason);
	snprintf(b->removed_reason, sizeof(b->removed_reason), "%s", reason);
	if (deleter && d->hooks && d->hooks->deleter_wait)
		d->hooks->deleter_wait(b, deleter);
	/*
	 * A sandbox still running is ended, and freed when the kernel has finished with it; in
	 * one process (in_process), whose client waits for it anyway, freed now (SIGKILL, wait).
	 */
	if (b->sb && paddock_sandbox_running(b->sb) && !d->stopping && !d->in_process) {
		paddock_sandbox_set_exit_callback(b->sb, box_dead, b);
		b->next = d->dying;
		d->dying = b;
		(void)paddock_sandbox_end(b->sb, NULL);
		return 0;
	}
	box_free(b);
	return 0;
}

void svc_box_destroy(struct box *b, const char *reason, void *deleter)
{
	(void)svc_box_delete(b, reason, deleter, true, NULL);
}

/* Waits for every sandbox being torn down (shutdown). */
void svc_box_finish_dying(struct daemon *d)
{
	while (d->dying) {
		struct box *b = d->dying;

		d->dying = b->next;
		box_free(b);
	}
}
