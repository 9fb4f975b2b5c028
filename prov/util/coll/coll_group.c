/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * coll_group.c - groups: fi_join_collective (members, key, region and
 * its registration, hellos to every peer, placements and CPU leaders)
 * until the join completes or fails, and a group's close and free.
 */
#include "coll_priv.h"

static void join_report(struct coll_group *g, int err)
{
	struct util_eq *eq = g->ce->ep->eq;
	struct fi_eq_entry e = {
		.fid = &g->mc_fid.fid,
		.context = g->join_context,
	};

	if (err) {
		g->state = G_FAILED;
		g->err = err;
		if (eq)
			ofi_eq_write_error(eq, &g->mc_fid.fid, g->join_context,
					   0, err, -err, NULL, 0);
		return;
	}
	g->state = G_READY;
	if (eq)
		ofi_eq_write(eq, FI_JOIN_COMPLETE, &e, sizeof(e));
}

static int rma_state(struct coll_rma *r)
{
	return __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
}

static void group_unlink(struct coll_group *g)
{
	if (g->shared && !g->unlinked)
		g->ce->shared->unlink(g->ce->ep, g->key);
	g->unlinked = true;
}

/*
 * Peer @i's region mapped if it shares memory, then a hello that says
 * whether: a member whose peers all said "mapped" removes its region's
 * name at once. @accepted: our hello landed (unmapped: mapping failed
 * before the peer registered, so try again and tell it).
 */
static ssize_t join_map(struct coll_group *g, size_t i, bool accepted)
{
	struct coll_chan *ch = &g->chan[i];

	if (accepted && (ch->peer || !g->shared))
		return 0; /* it knows */
	if (g->shared && !ch->peer)
		ch->peer = g->ce->shared->map(g->ce->ep, ch->addr, ch->key,
					      g->region_len);
	if (accepted && !ch->peer)
		return 0;
	return coll_rma_write_word(
		g, i, &ch->probe,
		coll_hello_value(g, ch->peer ? COLL_HELLO_MAPPED : COLL_HELLO),
		region_hello_word(g->n, g->me), true);
}

/*
 * A hello to @ch failed with @err (0: did not fail). A member that has
 * not joined yet refuses it (FI_EACCES: no region under the key) or is
 * slow to take it (FI_EAGAIN); any other error is the provider's word
 * that the member cannot be reached (its process or endpoint is gone).
 * Unreachable for probe_timeout ms, it fails the join (fi_collective(3):
 * the FI_EIO of a failed probe, not a wait for OFI_COLL_JOIN_MS).
 */
static bool join_unreachable(struct coll_group *g, struct coll_chan *ch,
			     int err, uint64_t now)
{
	size_t limit = g->ce->probe_timeout;

	if (!err || err == FI_EACCES || err == FI_EAGAIN) {
		ch->unreach_ms = 0;
		return false;
	}
	if (!ch->unreach_ms)
		ch->unreach_ms = now;
	return limit && now - ch->unreach_ms >= limit;
}

/* This member leads a folding group (ofi_coll_leaders): counted in
 * ofi_coll_ep.leading while the group lives. */
bool coll_group_leads(const struct coll_group *g)
{
	return g->lead && g->lead[g->me] == g->me;
}

/* The leaders in rank order and the members this one leads. */
static int join_lead_lists(struct coll_group *g)
{
	size_t i, k = 0;

	/* nlead leaders, then at most the n - nlead others */
	g->leaders = malloc(g->n * sizeof(*g->leaders));
	if (!g->leaders)
		return FI_ENOMEM;
	g->led = g->leaders + g->nlead;
	for (i = 0; i < g->n; i++) {
		if (g->lead[i] == i) {
			if (i == g->me)
				g->lead_idx = k;
			g->leaders[k++] = (uint32_t)i;
		} else if (g->lead[i] == g->me) {
			g->led[g->nled++] = (uint32_t)i;
		}
	}
	if (coll_group_leads(g))
		__atomic_add_fetch(&g->ce->leading, 1, __ATOMIC_RELAXED);
	return 0;
}

/* The members pinned to our CPU (g->here), from the placements. */
static void join_here(struct coll_group *g, const uint64_t *place)
{
	size_t i;

	for (i = 0; g->place && i < g->n; i++) {
		if (i == g->me || place[i] != g->place)
			continue;
		if (!g->here)
			g->here = calloc(g->n, 1);
		if (!g->here)
			return; /* only a hint: waits spin first */
		g->here[i] = 1;
	}
}

/*
 * Every hello landed: members that share a CPU (their placements in the
 * hellos) are grouped, the same way by every member, where the endpoint
 * folds. Any error fails the join: a member left without the grouping
 * would run another schedule.
 */
static int join_leaders(struct coll_group *g)
{
	uint64_t *place, hello;
	size_t i;
	int ret = 0;

	place = malloc(g->n * sizeof(*place));
	if (!place)
		return FI_ENOMEM;
	for (i = 0; i < g->n; i++)
		place[i] = i == g->me
				   ? g->place
				   : load_acquire(group_word(
					     g, region_hello_word(g->n, i))) >>
					     COLL_PLACE_SHIFT;
	join_here(g, place);
	if (g->n < 3)
		goto out; /* the same two messages either way */
	/* Only members that fold count as placed: every member derives
	 * the same grouping from the same hellos. */
	for (i = 0; i < g->n; i++) {
		hello = i == g->me ? coll_hello_value(g, 0)
				   : load_acquire(group_word(
					     g, region_hello_word(g->n, i)));
		if (!(hello & COLL_HELLO_FOLD))
			place[i] = 0;
	}
	g->lead = malloc(g->n * sizeof(*g->lead));
	if (!g->lead) {
		ret = FI_ENOMEM;
		goto out;
	}
	g->nlead = ofi_coll_leaders(place, g->n, g->lead);
	if (g->nlead < g->n)
		ret = join_lead_lists(g);
out:
	free(place);
	if (ret || g->nlead == g->n) { /* NULL: nobody shares a CPU */
		free(g->lead);
		g->lead = NULL;
	}
	return ret;
}

/* Hello to every peer until each accepted (its region exists). */
void coll_join_progress(struct coll_group *g)
{
	struct coll_chan *ch;
	size_t i, left = 0, unmapped = 0;
	uint64_t now = coll_now_ms(), hello;
	bool gone = false;
	ssize_t ret;

	/* The limit counts from the first progress, not from the call: an
	 * application may join, then compute before it looks at the EQ. */
	if (!g->join_start_ms)
		g->join_start_ms = now;
	for (i = 0; i < g->n; i++) {
		ch = &g->chan[i];
		if (i == g->me)
			continue;
		/* Symmetric: its hello reached us too, so neither side can
		 * leave while the other still waits for a hello to land. */
		hello = load_acquire(group_word(g, region_hello_word(g->n, i)));
		left += !hello;
		unmapped += (hello & COLL_HELLO_KIND) != COLL_HELLO_MAPPED;
		if (ch->joined)
			continue;
		if (rma_state(&ch->probe) == CR_DONE) {
			ch->probe.state = CR_IDLE;
			if (join_unreachable(g, ch, ch->probe.err, now))
				gone = true;
			if (!ch->probe.err) {
				ch->joined = true;
				join_map(g, i, true);
				continue;
			}
		}
		left++;
		/* A refused hello is retried at once (each try waits for
		 * the peer's answer) for a second, then every 10 ms. */
		if (rma_state(&ch->probe) != CR_IDLE ||
		    (now - g->join_start_ms > 1000 && now - ch->probe_ms < 10))
			continue;
		ch->probe_ms = now;
		ret = join_map(g, i, false);
		if (ret && join_unreachable(g, ch, (int)-ret, now))
			gone = true;
	}
	if (gone) {
		join_report(g, FI_EIO);
	} else if (!left) {
		for (i = 0; i < g->n; i++)
			g->chan[i].probe_ms = now;
		if (!unmapped) /* else at close: a late mapper may need it */
			group_unlink(g);
		join_report(g, join_leaders(g));
	} else if (now - g->join_start_ms > OFI_COLL_JOIN_MS) {
		join_report(g, FI_ETIMEDOUT);
	}
}

/* ------------------------------------------------------------------ */
/* Groups: join and close.                                              */

void coll_group_free(struct coll_group *g)
{
	struct coll_op *op;
	size_t i;

	while (!dlist_empty(&g->ops)) {
		op = container_of(g->ops.next, struct coll_op, entry);
		dlist_remove(&op->entry);
		coll_op_unregister(g, op);
		coll_op_release(op); /* off the engine's lock: no spare */
		free(op);
	}
	/* before the scratch buffers some of them name */
	for (i = 0; i < OFI_COLL_DREG_CACHE; i++)
		coll_dreg_drop(g, &g->dreg[i]);
	for (i = 0; g->chan && i < g->n; i++) {
		free(g->chan[i].scratch);
		if (g->chan[i].peer)
			g->ce->shared->unmap(g->chan[i].peer, g->region_len);
	}
	if (g->registered)
		(void)ofi_mr_map_remove(&g->ce->ep->domain->mr_map, g->key);
	FI_INFO(g->ce->ep->domain->prov, FI_LOG_EP_DATA,
		"collective group of %zu closed: %" PRIu64
		" chunks stored into peers (%" PRIu64
		" in a slot head), %" PRIu64 " written; %" PRIu64
		" ops done by their post (%" PRIu64 " small broadcasts"
		" without an op); %" PRIu64
		" next slot lines prefetched; %" PRIu64
		" direct receives, %" PRIu64 " through a cached registration;"
		" %zu members lead (ofi_coll_leaders), ours is rank %zu\n",
		g->n, g->stores, g->inl, g->writes, g->quiet, g->fast, g->ahead,
		g->dregs, g->dhits, g->lead ? g->nlead : g->n,
		g->lead ? (size_t)g->lead[g->me] : g->me);
	if (g->shared) {
		group_unlink(g);
		g->ce->shared->unmap(g->region, g->region_len);
	} else {
		free(g->region);
	}
	free(g->chan);
	free(g->members);
	if (coll_group_leads(g))
		__atomic_sub_fetch(&g->ce->leading, 1, __ATOMIC_RELAXED);
	free(g->lead);
	free(g->leaders);
	free(g->here);
	free(g);
}

/* Whether internal writes of the group are still in flight: they name
 * its memory, which the provider writes when they complete. */
bool coll_group_busy(struct coll_group *g)
{
	struct coll_chan *ch;
	size_t i;

	for (i = 0; i < g->n; i++) {
		ch = &g->chan[i];
		if (coll_chan_drain(g, ch, true) == 0 ||
		    !coll_rma_poll(&ch->ack) || !coll_rma_poll(&ch->rdv) ||
		    !coll_rma_poll(&ch->probe))
			return true;
	}
	return false;
}

/*
 * A group with writes in flight is parked on the closing list until the
 * provider completed (or, closing the endpoint, dropped) them: freed
 * now, their late completions would write freed memory. Its operations
 * not completed are dropped (fi_collective(3) leaves them undefined).
 */
static int mc_close(struct fid *fid)
{
	struct coll_group *g = container_of(fid, struct coll_group, mc_fid.fid);
	struct ofi_coll_ep *ce = g->ce;
	bool busy;

	ofi_mutex_lock(&ce->lock);
	dlist_remove(&g->entry);
	busy = coll_group_busy(g);
	if (busy)
		dlist_insert_tail(&g->entry, &ce->closing);
	ofi_mutex_unlock(&ce->lock);
	if (!busy)
		coll_group_free(g);
	return 0;
}

static struct fi_ops mc_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = mc_close,
	.bind = fi_no_bind,
	.control = fi_no_control,
	.ops_open = fi_no_ops_open,
	.tostr = fi_no_tostr,
	.ops_set = fi_no_ops_set,
};

static uint64_t coll_hash(uint64_t h, const void *p, size_t len)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* How many groups of these members this endpoint joined before. */
static uint64_t coll_generation(struct ofi_coll_ep *ce, uint64_t hash)
{
	struct coll_gen *gen;

	for (gen = ce->gens; gen; gen = gen->next) {
		if (gen->hash == hash)
			return gen->count++;
	}
	gen = calloc(1, sizeof(*gen));
	if (!gen)
		return 0;
	gen->hash = hash;
	gen->count = 1;
	gen->next = ce->gens;
	ce->gens = gen;
	return 0;
}

static uint64_t coll_key(uint64_t hash, uint64_t gen, size_t rank)
{
	uint64_t h = coll_hash(hash, &gen, sizeof(gen));

	return OFI_MR_KEY_ENGINE |
	       ((h << 12) & ~(OFI_MR_KEY_ENGINE_MASK | COLL_KEY_DIRECT)) | rank;
}

/* The members of a join: a set, a group's address or the whole AV. */
static int join_members(struct ofi_coll_ep *ce,
			const struct fi_collective_addr *ca, fi_addr_t **addrs,
			size_t *n)
{
	struct util_av *av = ce->ep->av, *sav;
	struct coll_group *g;
	uint8_t buf[av->prov_attr.addrlen];
	size_t i;
	int ret;

	if (ca->set) {
		ret = ofi_av_set_members(ca->set, &sav, addrs, n);
		if (!ret && sav != av) {
			free(*addrs);
			ret = -FI_EINVAL;
		}
		return ret;
	}
	if (ca->coll_addr != FI_ADDR_NOTAVAIL) {
		g = coll_group_of(ce, ca->coll_addr);
		if (!g)
			return -FI_EINVAL;
		*addrs = malloc(g->n * sizeof(**addrs));
		if (!*addrs)
			return -FI_ENOMEM;
		memcpy(*addrs, g->members, g->n * sizeof(**addrs));
		*n = g->n;
		return 0;
	}
	*addrs = malloc((av->cap ? av->cap : 1) * sizeof(**addrs));
	if (!*addrs)
		return -FI_ENOMEM;
	for (*n = 0, i = 0; i < av->cap; i++) {
		if (!ofi_av_get_addr(av, i, buf))
			(*addrs)[(*n)++] = i;
	}
	return 0;
}

static int join_addr_cmp(const void *a, const void *b, void *len)
{
	return memcmp(a, b, *(size_t *)len);
}

/*
 * Whether two of the @n addresses of @len bytes at @all are one endpoint
 * (two fi_addrs of the AV for one address): such a member would hold two
 * ranks, and the join would wait for a hello it cannot answer twice.
 */
static bool join_dup(uint8_t *all, size_t n, size_t len)
{
	size_t i;

	qsort_r(all, n, len, join_addr_cmp, &len);
	for (i = 1; i < n; i++) {
		if (!memcmp(all + (i - 1) * len, all + i * len, len))
			return true;
	}
	return false;
}

/* Our rank, and the group hash over the members' addresses in order. */
static int join_identity(struct coll_group *g, uint64_t *hash)
{
	struct util_ep *ep = g->ce->ep;
	size_t len = ep->av->prov_attr.addrlen, nlen = len, i;
	uint8_t name[len], *all;
	fi_addr_t self;
	int ret;

	ret = fi_getname(&ep->ep_fid.fid, name, &nlen);
	if (ret)
		return ret;
	all = malloc(g->n * len);
	if (!all)
		return -FI_ENOMEM;
	self = ofi_av_reverse_lookup(ep->av, name);
	*hash = 0xcbf29ce484222325ULL;
	g->me = SIZE_MAX;
	ret = -FI_EINVAL;
	for (i = 0; i < g->n; i++) {
		if (ofi_av_get_addr(ep->av, g->members[i], all + i * len))
			goto out;
		*hash = coll_hash(*hash, all + i * len, len);
		if (g->members[i] == self && g->me == SIZE_MAX)
			g->me = i;
	}
	if (g->me != SIZE_MAX && !join_dup(all, g->n, len))
		ret = 0;
out:
	free(all);
	return ret;
}

static int join_register(struct coll_group *g, uint64_t hash, uint64_t gen)
{
	struct ofi_mr_map *map = &g->ce->ep->domain->mr_map;
	struct iovec iov;
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = FI_REMOTE_WRITE | FI_REMOTE_READ,
		.iface = FI_HMEM_SYSTEM,
	};
	size_t i;
	uint64_t key;
	int ret;

	g->region_len = region_slot_offset(g->n, g->slot_size, g->n, 0);
	g->key = coll_key(hash, gen, g->me);
	/* Shared memory: every member maps every other's region. */
	if (g->ce->shared && g->n <= OFI_COLL_SHARED_MAX)
		g->region =
			g->ce->shared->create(g->ce->ep, g->key, g->region_len);
	g->shared = g->region != NULL;
	if (!g->region)
		g->region = calloc(1, g->region_len);
	g->chan = calloc(g->n, sizeof(*g->chan));
	if (!g->region || !g->chan)
		return -FI_ENOMEM;
	for (i = 0; i < g->n; i++) {
		g->chan[i].addr = g->members[i];
		g->chan[i].key = coll_key(hash, gen, i);
	}
	iov.iov_base = g->region;
	iov.iov_len = g->region_len;
	attr.requested_key = g->key;
	g->mr.domain = g->ce->ep->domain;
	g->mr.access = attr.access;
	g->mr.iface = FI_HMEM_SYSTEM;
	ret = ofi_mr_map_insert(map, &attr, OFI_MR_INTERNAL, &key, &g->mr);
	g->registered = !ret;
	return ret;
}

/* This host: its boot id hashed (FNV-1a), never 0; 0 if unreadable. */
static uint32_t coll_host(void)
{
	static uint32_t host;
	uint32_t h = __atomic_load_n(&host, __ATOMIC_RELAXED);
	char id[64];
	ssize_t len, i;
	int fd;

	if (h)
		return h;
	fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	len = read(fd, id, sizeof(id));
	close(fd);
	if (len <= 0)
		return 0;
	for (h = 2166136261u, i = 0; i < len; i++)
		h = (h ^ (uint8_t)id[i]) * 16777619u;
	h |= 1;
	__atomic_store_n(&host, h, __ATOMIC_RELAXED);
	return h;
}

/*
 * This member's placement for ofi_coll_leaders: the host and the one CPU
 * the joining thread is pinned to, or 0 when it may run on several.
 */
uint64_t coll_place(void)
{
	cpu_set_t set;
	uint32_t host;
	int cpu;

	if (sched_getaffinity(0, sizeof(set), &set) || CPU_COUNT(&set) != 1)
		return 0;
	for (cpu = 0; !CPU_ISSET(cpu, &set); cpu++)
		;
	host = coll_host();
	if (!host || cpu >= (1 << 24) - 1)
		return 0;
	return (uint64_t)host << 24 | (uint64_t)(cpu + 1);
}

int coll_join(struct fid_ep *ep_fid, const void *addr, uint64_t flags,
	      struct fid_mc **mc, void *context)
{
	struct util_ep *ep = container_of(ep_fid, struct util_ep, ep_fid);
	struct ofi_coll_ep *ce = ep->coll;
	struct coll_group *g;
	uint64_t hash;
	int ret;

	if (!(flags & FI_COLLECTIVE))
		return -FI_ENOSYS; /* multicast: not offered */
	if (!addr || !mc || (flags & ~(uint64_t)FI_COLLECTIVE))
		return -FI_EINVAL;
	if (!ep->eq)
		return -FI_ENOEQ;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -FI_ENOMEM;
	dlist_init(&g->ops);
	g->ce = ce;
	g->join_context = context;
	ofi_mutex_lock(&ce->lock);
	ret = join_members(ce, addr, &g->members, &g->n);
	if (ret)
		goto err;
	if (!g->n || g->n > OFI_COLL_MAX_MEMBERS) {
		ret = -FI_EINVAL;
		goto err;
	}
	g->slot_size = ce->slot_size;
	if (!g->slot_size)
		g->slot_size = g->n > OFI_COLL_SLOT_BIG_N
				       ? OFI_COLL_SLOT_SIZE / 2
				       : OFI_COLL_SLOT_SIZE;
	ret = join_identity(g, &hash);
	if (!ret)
		ret = join_register(g, hash, coll_generation(ce, hash));
	if (ret)
		goto err;
	/* Published in our hellos (join_leaders): who shares our CPU */
	g->place = coll_place();
	g->mc_fid.fid.fclass = FI_CLASS_MC;
	g->mc_fid.fid.context = context;
	g->mc_fid.fid.ops = &mc_fi_ops;
	g->mc_fid.fi_addr = (fi_addr_t)(uintptr_t)g;
	g->state = G_JOINING;
	dlist_insert_tail(&g->entry, &ce->groups);
	*mc = &g->mc_fid;
	ofi_mutex_unlock(&ce->lock);
	return 0;
err:
	ofi_mutex_unlock(&ce->lock);
	coll_group_free(g);
	return ret;
}
