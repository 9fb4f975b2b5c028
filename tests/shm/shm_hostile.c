/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_hostile.c - a hostile peer against the shm provider's trust
 * boundary. For each case a fresh victim process opens an endpoint,
 * registers memory between guard areas and posts receives; the attacker
 * (this process) connects like any sender, then maps the victim's region
 * from /dev/shm by its address and, case by case, corrupts header, ring
 * and peer-slot fields or posts raw out-of-range commands through the
 * wire format of shm_wire.h. The victim keeps progressing and must
 * survive: no crash (its exit status), no hang (alarm, and a deadline
 * here), its guard areas and registered memory untouched, and, where the
 * case allows, a legitimate message from the attacker still arrives.
 *
 * SHM_HOSTILE_XFAIL="name ..." lists cases expected to fail on this tree
 * (message-path validation done elsewhere); they report XFAIL / XPASS and
 * do not fail the run. SHM_HOSTILE_ONLY=name runs one case.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "shm_wire.h"

#define GUARD	  16384
#define MR_LEN	  16384
#define RO_LEN	  4096
#define RBUF_LEN  4096
#define RBUF_CNT  4
#define GUARD_VAL 0xa5
#define AREA_LEN  (4 * GUARD + MR_LEN + RO_LEN + RBUF_LEN * RBUF_CNT)

struct ctl {
	volatile int ready, req, done, stop, result;
	volatile int recvs, send_req, send_done;
	volatile int send_len;	/* of the victim's next send, 0: 2000 */
	volatile int mr_expect; /* the case writes 8 bytes at mr[0] */
	uint8_t mr_bytes[8];
	char vname[SHM_NAME_MAX], aname[SHM_NAME_MAX];
	uint64_t mr_addr, mr_key, ro_addr, ro_key;
	char why[160];
};

static struct ctl *ctl;

/* ------------------------------------------------------------------ */
/* Endpoints.                                                          */

struct node {
	struct fi_info *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_cq *cq;
};

static int node_open(struct node *n)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_TAGGED};
	struct fi_av_attr ava = {.type = FI_AV_TABLE};
	int ret;

	memset(n, 0, sizeof(*n));
	if (!hints)
		return -FI_ENOMEM;
	hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_RMA_EVENT;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->mr_mode =
		FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("shm");
	hints->addr_format = FI_ADDR_STR;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &n->info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	ret = fi_fabric(n->info->fabric_attr, &n->fab, NULL) ?:
	      fi_domain(n->fab, n->info, &n->dom, NULL) ?:
	      fi_av_open(n->dom, &ava, &n->av, NULL) ?:
	      fi_cq_open(n->dom, &cqa, &n->cq, NULL) ?:
	      fi_endpoint(n->dom, n->info, &n->ep, NULL) ?:
	      fi_ep_bind(n->ep, &n->av->fid, 0) ?:
	      fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV) ?:
	      fi_enable(n->ep);
	return ret;
}

static void node_close(struct node *n)
{
	if (n->ep)
		fi_close(&n->ep->fid);
	if (n->cq)
		fi_close(&n->cq->fid);
	if (n->av)
		fi_close(&n->av->fid);
	if (n->dom)
		fi_close(&n->dom->fid);
	if (n->fab)
		fi_close(&n->fab->fid);
	fi_freeinfo(n->info);
}

/* ------------------------------------------------------------------ */
/* The victim.                                                         */

static uint8_t *area, *mr_buf, *ro_buf, *rbuf;
static uint8_t mr_snap[MR_LEN];

static bool guards_ok(void)
{
	static const size_t at[] = {
		0, GUARD + MR_LEN, 2 * GUARD + MR_LEN + RO_LEN,
		3 * GUARD + MR_LEN + RO_LEN + RBUF_LEN * RBUF_CNT};
	size_t i, j;

	for (i = 0; i < 4; i++)
		for (j = 0; j < GUARD; j++)
			if (area[at[i] + j] != GUARD_VAL)
				return false;
	for (j = 0; j < RO_LEN; j++)
		if (ro_buf[j] != (uint8_t)(j * 7))
			return false;
	return true;
}

static void victim_post(struct node *n, int i)
{
	while (fi_recv(n->ep, rbuf + i * RBUF_LEN, RBUF_LEN, NULL,
		       FI_ADDR_UNSPEC,
		       (void *)(uintptr_t)(i + 1)) == -FI_EAGAIN)
		fi_cq_read(n->cq, NULL, 0);
}

static void victim_progress(struct node *n)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	ssize_t ret;

	ret = fi_cq_read(n->cq, &e, 1);
	if (ret == 1 && (e.flags & FI_RECV)) {
		ctl->recvs++;
		victim_post(n, (int)(uintptr_t)e.op_context - 1);
	} else if (ret == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		if (fi_cq_readerr(n->cq, &err, 0) == 1 &&
		    (err.flags & FI_RECV) && err.op_context)
			victim_post(n, (int)(uintptr_t)err.op_context - 1);
	}
}

/* The victim sends to the attacker (its inject pool may be corrupt). */
static void victim_send(struct node *n)
{
	static fi_addr_t peer = FI_ADDR_NOTAVAIL;
	static uint8_t buf[256 * 1024];
	size_t len = ctl->send_len > 0 && ctl->send_len <= (int)sizeof(buf)
			     ? (size_t)ctl->send_len
			     : 2000;
	time_t end = time(NULL) + 2;
	ssize_t ret;

	if (peer == FI_ADDR_NOTAVAIL &&
	    fi_av_insert(n->av, ctl->aname, 1, &peer, 0, NULL) != 1)
		return;
	do {
		ret = fi_send(n->ep, buf, len, NULL, peer, NULL);
		victim_progress(n);
	} while (ret == -FI_EAGAIN && time(NULL) < end);
}

static int victim_check(struct node *n)
{
	struct timespec t0, t;
	size_t i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		victim_progress(n);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + t.tv_nsec - t0.tv_nsec <
		 30000000L);
	if (!guards_ok()) {
		snprintf(ctl->why, sizeof(ctl->why), "guard area changed");
		return 1;
	}
	if (ctl->mr_expect) {
		if (memcmp(mr_buf, ctl->mr_bytes, 8)) {
			snprintf(ctl->why, sizeof(ctl->why),
				 "valid RMA write did not land");
			return 1;
		}
		memcpy(mr_snap, mr_buf, 8);
	}
	for (i = 0; i < MR_LEN; i++) {
		if (mr_buf[i] != mr_snap[i]) {
			snprintf(ctl->why, sizeof(ctl->why),
				 "registered memory changed at %zu", i);
			return 1;
		}
	}
	return 0;
}

static int victim(void)
{
	struct fid_mr *mr, *ro;
	struct node n;
	size_t len = sizeof(ctl->vname);
	int i, bad = 0;

	alarm(8); /* a hang is a failure: SIGALRM ends us */
	area = mmap(NULL, AREA_LEN, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED)
		return 2;
	memset(area, GUARD_VAL, AREA_LEN);
	mr_buf = area + GUARD;
	ro_buf = mr_buf + MR_LEN + GUARD;
	rbuf = ro_buf + RO_LEN + GUARD;
	for (i = 0; i < MR_LEN; i++)
		mr_buf[i] = (uint8_t)(i * 13);
	for (i = 0; i < RO_LEN; i++)
		ro_buf[i] = (uint8_t)(i * 7);
	memcpy(mr_snap, mr_buf, MR_LEN);
	if (node_open(&n) ||
	    fi_mr_reg(n.dom, mr_buf, MR_LEN, FI_REMOTE_READ | FI_REMOTE_WRITE,
		      0, 0, 0, &mr, NULL) ||
	    fi_mr_reg(n.dom, ro_buf, RO_LEN, FI_REMOTE_READ, 0, 0, 0, &ro,
		      NULL) ||
	    fi_getname(&n.ep->fid, ctl->vname, &len))
		return 2;
	ctl->mr_addr = (uintptr_t)mr_buf;
	ctl->mr_key = fi_mr_key(mr);
	ctl->ro_addr = (uintptr_t)ro_buf;
	ctl->ro_key = fi_mr_key(ro);
	for (i = 0; i < RBUF_CNT; i++)
		victim_post(&n, i);
	__atomic_store_n(&ctl->ready, 1, __ATOMIC_RELEASE);
	while (!ctl->stop) {
		victim_progress(&n);
		if (ctl->send_req != ctl->send_done) {
			victim_send(&n);
			ctl->send_done = ctl->send_req;
		}
		if (ctl->req != ctl->done) {
			bad |= victim_check(&n);
			ctl->result = bad;
			__atomic_store_n(&ctl->done, ctl->req,
					 __ATOMIC_RELEASE);
		}
	}
	fi_close(&mr->fid);
	fi_close(&ro->fid);
	node_close(&n);
	return bad;
}

/* ------------------------------------------------------------------ */
/* The attacker.                                                       */

static struct node att;
static fi_addr_t vaddr;
static struct shm_layout *vmap, *amap;
static struct shm_region vr;
static uint16_t att_id;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static struct shm_layout *map_region(const char *name)
{
	char obj[SHM_NAME_MAX + 16], *p;
	void *m;
	int fd;

	snprintf(obj, sizeof(obj), "/ofi_shm_%s",
		 name + strlen(SHM_ADDR_PREFIX));
	for (p = obj + 1; *p; p++)
		if (*p == '/')
			*p = '_';
	fd = shm_open(obj, O_RDWR, 0);
	if (fd < 0)
		return NULL;
	m = mmap(NULL, SHM_REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 0);
	close(fd);
	return m == MAP_FAILED ? NULL : m;
}

/* A legitimate message from the attacker; true once the victim has it. */
static bool legit_send(void)
{
	static char msg[8] = "hello";
	int before = ctl->recvs;
	double end = now() + 3;
	ssize_t ret;

	do {
		ret = fi_send(att.ep, msg, sizeof(msg), NULL, vaddr, NULL);
		fi_cq_read(att.cq, NULL, 0);
	} while (ret == -FI_EAGAIN && now() < end);
	if (ret)
		return false;
	while (ctl->recvs == before && now() < end)
		fi_cq_read(att.cq, NULL, 0);
	return ctl->recvs != before;
}

static void post_raw(const struct shm_cmd *c)
{
	struct shm_cmd *slot = NULL;
	uint64_t pos;
	int i;

	for (i = 0; i < 100000 && !slot; i++)
		slot = shm_ring_claim(&vr.cmd, &pos);
	if (!slot)
		return;
	memcpy((uint8_t *)slot + sizeof(slot->seq),
	       (const uint8_t *)c + sizeof(c->seq),
	       sizeof(*c) - sizeof(c->seq));
	vmap->peers[att_id].last_pos = pos + 1;
	shm_ring_commit(slot, pos);
}

static void base_msg(struct shm_cmd *c, uint8_t proto, uint64_t size)
{
	memset(c, 0, sizeof(*c));
	c->op = SHM_OP_MSG;
	c->proto = proto;
	c->src_id = att_id;
	c->size = size;
	c->msg_id = ~0ULL;
}

static void base_rma(struct shm_cmd *c, uint8_t op, uint8_t proto,
		     uint64_t addr, uint64_t len, uint64_t key)
{
	memset(c, 0, sizeof(*c));
	c->op = op;
	c->proto = proto;
	c->src_id = att_id;
	c->size = len;
	c->tag = len;
	c->msg_id = ~0ULL;
	c->u.rma.rma_count = 1;
	c->u.rma.rma[0].addr = addr;
	c->u.rma.rma[0].len = len;
	c->u.rma.rma[0].key = key;
}

/* Fills the attacker's inject buffer @i with a pattern the MR lacks. */
static uint32_t att_inject(uint32_t i)
{
	memset(amap->inject[i].data, 0xee, SHM_INJECT_SIZE);
	atomic_store(&amap->inject[i].busy, 1);
	return i;
}

/* ---- cases: header and ring fields of the victim's own region ----- */

static void case_hdr_garbage(void)
{
	struct shm_hdr save = vmap->hdr;

	memset(&vmap->hdr, 0xff, sizeof(vmap->hdr));
	vmap->hdr.name[5] = 'x'; /* no NUL anywhere */
	usleep(20000);
	legit_send();
	memcpy(&vmap->hdr, &save, sizeof(save));
}

static void case_ring_ctl_garbage(void)
{
	struct shm_ring_ctl c = vmap->cmd_ctl, r = vmap->resp_ctl;

	/* Where offsets, masks and slot sizes used to be read from. */
	memset(&vmap->cmd_ctl, 0x7f, sizeof(vmap->cmd_ctl));
	memset(&vmap->resp_ctl, 0x7f, sizeof(vmap->resp_ctl));
	usleep(20000);
	atomic_store(&vmap->cmd_ctl.tail, atomic_load(&c.tail));
	atomic_store(&vmap->resp_ctl.tail, atomic_load(&r.tail));
}

static void case_ring_head_published(void)
{
	atomic_store(&vmap->cmd_ctl.head, 0x123456789abcULL);
	atomic_store(&vmap->resp_ctl.head, ~0ULL);
}

static void case_ring_tail_wrap(void)
{
	uint64_t t = atomic_load(&vmap->cmd_ctl.tail);

	atomic_store(&vmap->cmd_ctl.tail, t + 5 * SHM_CMD_SLOTS + 3);
	usleep(20000);
	atomic_store(&vmap->cmd_ctl.tail, t);
}

static void case_ring_seq_garbage(void)
{
	uint32_t i;

	/* Sequences of free slots far ahead: never a command to consume. */
	for (i = 0; i < SHM_CMD_SLOTS; i += 7)
		if (atomic_load(&vmap->cmd[i].seq) <
		    atomic_load(&vmap->cmd_ctl.tail))
			atomic_store(&vmap->cmd[i].seq, ~0ULL - i);
	usleep(20000);
}

static void case_inject_busy(void)
{
	uint32_t i, save[SHM_INJECT_BUFS];

	for (i = 0; i < SHM_INJECT_BUFS; i++) {
		save[i] = atomic_load(&vmap->inject[i].busy);
		atomic_store(&vmap->inject[i].busy, 0xdeadbeef);
	}
	ctl->send_req++;
	while (ctl->send_done != ctl->send_req)
		usleep(1000);
	for (i = 0; i < SHM_INJECT_BUFS; i++)
		atomic_store(&vmap->inject[i].busy, save[i]);
}

/* ---- cases: the attacker's slot in the victim's peer table -------- */

/*
 * A message and an RMA write from the tampered slot; whether the victim
 * takes them (it may remap the slot after we restored it) or drops them,
 * the write stores what the victim's memory already holds.
 */
static void slot_then_cmd(void)
{
	struct shm_cmd c;
	int i;

	base_msg(&c, SHM_PROTO_INLINE, 8);
	post_raw(&c);
	base_rma(&c, SHM_OP_WRITE, SHM_PROTO_INLINE, ctl->mr_addr, 8,
		 ctl->mr_key);
	for (i = 0; i < 8; i++)
		c.u.rma.inline_data[i] = (uint8_t)(i * 13);
	post_raw(&c);
	usleep(20000);
}

static void case_slot_name_unterminated(void)
{
	struct shm_peer_slot save = vmap->peers[att_id];

	memset(vmap->peers[att_id].name, 'A', SHM_NAME_MAX);
	atomic_fetch_add(&vmap->peers[att_id].gen, 1);
	slot_then_cmd();
	memcpy(vmap->peers[att_id].name, save.name, SHM_NAME_MAX);
	atomic_fetch_add(&vmap->peers[att_id].gen, 1);
}

static void case_slot_name_victim(void)
{
	struct shm_peer_slot save = vmap->peers[att_id];

	/* The slot names the victim itself: it maps its own region. */
	snprintf(vmap->peers[att_id].name, SHM_NAME_MAX, "%s", ctl->vname);
	atomic_fetch_add(&vmap->peers[att_id].gen, 1);
	slot_then_cmd();
	memcpy(vmap->peers[att_id].name, save.name, SHM_NAME_MAX);
	atomic_fetch_add(&vmap->peers[att_id].gen, 1);
}

static void case_slot_state_garbage(void)
{
	uint32_t st = atomic_load(&vmap->peers[att_id].state);

	atomic_store(&vmap->peers[att_id].state, 0x55aa);
	atomic_fetch_add(&vmap->peers[att_id].gen, 1);
	slot_then_cmd();
	atomic_store(&vmap->peers[att_id].state, st);
	atomic_fetch_add(&vmap->peers[att_id].gen, 1);
}

static void case_slot_closed_linger(void)
{
	struct shm_peer_slot *s = &vmap->peers[att_id];
	struct shm_peer_slot save = *s;

	/* Closed, lingering under a name that is no shm object of ours. */
	memset(s->linger, '/', SHM_LINGER_NAME_MAX);
	s->last_pos = 0;
	atomic_store(&s->state, SHM_PEER_CLOSED);
	atomic_fetch_add(&vmap->hdr.closed, 1);
	atomic_fetch_add(&s->gen, 1);
	slot_then_cmd();
	memcpy(s->linger, save.linger, SHM_LINGER_NAME_MAX);
	s->last_pos = save.last_pos;
	atomic_store(&s->state, SHM_PEER_READY);
	atomic_fetch_add(&s->gen, 1);
}

static void case_own_hdr_corrupt(void)
{
	struct shm_hdr save = amap->hdr;

	/* The attacker's own region, as the victim maps it anew. */
	amap->hdr.version = 99;
	amap->hdr.pid = 1;
	memset(amap->hdr.name, 'B', SHM_NAME_MAX);
	atomic_fetch_add(&vmap->peers[att_id].gen, 1);
	slot_then_cmd();
	amap->hdr = save;
	atomic_fetch_add(&vmap->peers[att_id].gen, 1);
}

static void case_own_pid_lie(void)
{
	struct shm_cmd c;
	int32_t pid = amap->hdr.pid;

	/* CMA aimed at another process (our parent, the test driver). */
	amap->hdr.pid = getppid();
	atomic_fetch_add(&vmap->peers[att_id].gen, 1);
	base_rma(&c, SHM_OP_READ, SHM_PROTO_CMA, ctl->mr_addr, 64, ctl->mr_key);
	c.u.rma.iov_count = 1;
	c.u.rma.iov[0].addr = 0x10000;
	c.u.rma.iov[0].len = 64;
	post_raw(&c);
	usleep(20000);
	amap->hdr.pid = pid;
	atomic_fetch_add(&vmap->peers[att_id].gen, 1);
}

/*
 * Our region claims its endpoint closed (any value) while the victim has
 * a streamed and an inject send to us in flight, and while it sends
 * again: its transfers to us fail, nothing else.
 */
static void victim_sends(int len)
{
	ctl->send_len = len;
	ctl->send_req++;
	while (ctl->send_done != ctl->send_req)
		usleep(1000);
}

static void case_own_rx_closed_forged(void)
{
	victim_sends(200 * 1024);
	victim_sends(2000);
	atomic_store(&amap->hdr.rx_closed, 0xffffffffu);
	usleep(50000);
	victim_sends(200 * 1024);
	victim_sends(2000);
	atomic_store(&amap->hdr.rx_closed, 0);
	ctl->send_len = 0;
}

/* ---- cases: message commands (validated in shm_msg.c) ------------- */

static void case_msg_bad_op(void)
{
	struct shm_cmd c;

	base_msg(&c, SHM_PROTO_INLINE, 8);
	c.op = 0;
	post_raw(&c);
	c.op = 200;
	post_raw(&c);
	c.op = SHM_OP_MAX;
	post_raw(&c);
}

static void case_msg_bad_proto(void)
{
	struct shm_cmd c;

	base_msg(&c, 0, 8);
	post_raw(&c);
	c.proto = 200;
	post_raw(&c);
	c.proto = SHM_PROTO_MAX;
	post_raw(&c);
}

static void case_msg_inline_huge(void)
{
	struct shm_cmd c;

	base_msg(&c, SHM_PROTO_INLINE, 1ULL << 40);
	post_raw(&c);
	c.size = SHM_INLINE_MAX + 1;
	post_raw(&c);
	c.op = SHM_OP_TAGGED; /* unexpected */
	c.tag = 0x999;
	post_raw(&c);
}

static void case_msg_inject_bad(void)
{
	struct shm_cmd c;

	base_msg(&c, SHM_PROTO_INJECT, 100);
	c.u.inject.buf = 0xffffffff;
	post_raw(&c);
	c.u.inject.buf = att_inject(3);
	c.size = ~0ULL;
	post_raw(&c);
	c.size = SHM_INJECT_SIZE + 1;
	post_raw(&c);
}

static void case_msg_cma_bad(void)
{
	struct shm_cmd c;

	base_msg(&c, SHM_PROTO_CMA, 100);
	c.u.cma.iov_count = 255;
	post_raw(&c);
	c.u.cma.iov_count = 2;
	c.u.cma.iov[0].addr = 8;
	c.u.cma.iov[0].len = ~0ULL;
	c.u.cma.iov[1].len = 101;
	post_raw(&c);
	c.u.cma.iov_count = 1;
	c.u.cma.iov[0].len = 100; /* an unmapped address of ours */
	post_raw(&c);
}

static void case_msg_bad_src(void)
{
	struct shm_cmd c;

	base_msg(&c, SHM_PROTO_INLINE, 8);
	c.src_id = 0xffff;
	post_raw(&c);
	c.src_id = (att_id + 1) % SHM_MAX_PEERS; /* a free slot */
	post_raw(&c);
}

/* An unexpected segmented message the size of the address space. */
static void case_sar_unexp_huge(void)
{
	struct shm_cmd c;

	base_msg(&c, SHM_PROTO_SAR, 1ULL << 60);
	c.op = SHM_OP_TAGGED;
	c.tag = 0x4242;
	post_raw(&c);
	usleep(20000);
}

static void case_sar_bad_seg(void)
{
	struct shm_cmd c;
	uint32_t i;

	base_msg(&c, SHM_PROTO_SAR, 3 * SHM_SAR_SEG_SIZE);
	c.msg_id = 0x77;
	for (i = 0; i < 3; i++) {
		amap->sar[1][i].msg_id = 0x77;
		amap->sar[1][i].off = i * (uint64_t)SHM_SAR_SEG_SIZE;
		amap->sar[1][i].len = i ? 0xffffffff : SHM_SAR_SEG_SIZE;
		amap->sar[1][i].err = i == 1 ? 0x80000000u : 0;
		atomic_store(&amap->sar[1][i].full, 1);
	}
	atomic_store(&vmap->peers[att_id].sar_chan, 2);
	post_raw(&c);
	usleep(50000);
	for (i = 0; i < SHM_SAR_CHAN_SEGS; i++)
		atomic_store(&amap->sar[1][i].full, 0);
	atomic_store(&vmap->peers[att_id].sar_chan, 0);
}

/*
 * The channel our slot names is out of range, then right but its
 * segments lie about their offsets and repeat a message's first one.
 */
static void case_sar_chan_garbage(void)
{
	static const uint32_t chans[] = {~0U, SHM_SAR_CHANS + 1, 0x80000001u};
	struct shm_cmd c;
	uint32_t i;

	base_msg(&c, SHM_PROTO_SAR, 2 * SHM_SAR_SEG_SIZE);
	c.msg_id = 0x99;
	for (i = 0; i < SHM_SAR_CHAN_SEGS; i++) {
		amap->sar[0][i].msg_id = 0x99;
		amap->sar[0][i].off = i == 1 ? 12345 : 0;
		amap->sar[0][i].len = SHM_SAR_SEG_SIZE;
		atomic_store(&amap->sar[0][i].full, 1);
	}
	post_raw(&c);
	for (i = 0; i < sizeof(chans) / sizeof(chans[0]); i++) {
		atomic_store(&vmap->peers[att_id].sar_chan, chans[i]);
		usleep(20000);
	}
	atomic_store(&vmap->peers[att_id].sar_chan, 1);
	usleep(20000);
	for (i = 0; i < SHM_SAR_CHAN_SEGS; i++)
		atomic_store(&amap->sar[0][i].full, 0);
	atomic_store(&vmap->peers[att_id].sar_chan, 0);
}

static void case_ipc_garbage(void)
{
	struct shm_cmd c;

	/* Each names no pool entry that could be read: dropped unread. */
	base_msg(&c, SHM_PROTO_IPC, 4096);
	c.u.ipc.entry = 0xffff;
	c.u.ipc.gen = 2;
	post_raw(&c);
	c.u.ipc.entry = SHM_IPC_POOL_SIZE;
	post_raw(&c);
	c.u.ipc.entry = 0;
	c.u.ipc.gen = 0; /* never published */
	post_raw(&c);
	c.u.ipc.gen = 3; /* being written */
	post_raw(&c);
	c.u.ipc.gen = 2;
	c.u.ipc.offset = ~0ULL; /* offset + size wraps */
	post_raw(&c);
}

/* ---- cases: RMA and atomic commands ------------------------------- */

/* A valid inline write of @v with @flags: it must land. */
static void post_valid_write(uint32_t flags, const uint8_t *v)
{
	struct shm_cmd c;

	base_rma(&c, SHM_OP_WRITE, SHM_PROTO_INLINE, ctl->mr_addr, 8,
		 ctl->mr_key);
	c.flags = flags;
	memcpy(c.u.rma.inline_data, v, 8);
	memcpy(ctl->mr_bytes, v, 8);
	ctl->mr_expect = 1;
	post_raw(&c);
}

static void case_rma_valid_control(void)
{
	static const uint8_t v[8] = {1, 2, 3, 4, 5, 6, 7, 8};

	post_valid_write(0, v);
}

/* An unacked write (the collective engine's) lands like any other... */
static void case_rma_no_ack_valid(void)
{
	static const uint8_t v[8] = {8, 7, 6, 5, 4, 3, 2, 1};

	post_valid_write(SHM_CMD_NO_ACK, v);
}

/* ... but only whole, inline and without a commit to promise. */
static void case_rma_no_ack_bad(void)
{
	static const uint8_t v[8] = {9, 9, 9, 9, 9, 9, 9, 9};
	struct shm_cmd c;

	base_rma(&c, SHM_OP_WRITE, SHM_PROTO_INLINE, ctl->mr_addr, 8,
		 ctl->mr_key);
	memcpy(c.u.rma.inline_data, v, 8);
	c.flags = SHM_CMD_NO_ACK | SHM_CMD_COMMIT;
	post_raw(&c);
	/* the first chunk of a 16-byte write */
	c.flags = SHM_CMD_NO_ACK | SHM_CMD_RMA_MORE;
	c.tag = c.u.rma.rma[0].len = 16;
	post_raw(&c);
	c.flags = SHM_CMD_NO_ACK;
	c.tag = c.u.rma.rma[0].len = 8;
	c.op = SHM_OP_READ;
	post_raw(&c);
}

static void case_rma_bad_op_proto(void)
{
	struct shm_cmd c;

	/* Only writes and reads stream. */
	base_rma(&c, SHM_OP_ATOMIC, SHM_PROTO_SAR, ctl->mr_addr, 8,
		 ctl->mr_key);
	post_raw(&c);
	c.op = SHM_OP_WRITE;
	c.proto = 0;
	post_raw(&c);
	c.proto = SHM_PROTO_IPC;
	post_raw(&c);
	c.proto = SHM_PROTO_INLINE;
	c.op = SHM_OP_READ; /* a read never comes inline */
	post_raw(&c);
	c.op = SHM_OP_WRITE;
	c.flags = 0xffff0000;
	post_raw(&c);
}

static void case_rma_counts(void)
{
	struct shm_cmd c;

	base_rma(&c, SHM_OP_WRITE, SHM_PROTO_INLINE, ctl->mr_addr, 8,
		 ctl->mr_key);
	c.u.rma.rma_count = 0;
	post_raw(&c);
	c.u.rma.rma_count = 255;
	post_raw(&c);
	base_rma(&c, SHM_OP_WRITE, SHM_PROTO_CMA, ctl->mr_addr, 8, ctl->mr_key);
	c.u.rma.iov_count = 255;
	post_raw(&c);
}

/* fi_commit commands carry ranges only: anything else is refused. */
static void case_commit_garbage(void)
{
	struct shm_cmd c;

	base_rma(&c, SHM_OP_COMMIT, SHM_PROTO_INLINE, ctl->mr_addr, 8,
		 ctl->mr_key);
	c.size = 8; /* a payload */
	post_raw(&c);
	c.size = 0;
	c.proto = SHM_PROTO_INJECT;
	post_raw(&c);
	c.proto = SHM_PROTO_INLINE;
	c.flags = SHM_CMD_DATA | SHM_CMD_RMA_MORE;
	post_raw(&c);
	c.flags = 0;
	c.u.rma.offset = 4;
	post_raw(&c);
	c.u.rma.offset = 0;
	c.u.rma.rma_count = 255;
	post_raw(&c);
	c.u.rma.rma_count = 1;
	c.tag = 16; /* a commit carries no total */
	post_raw(&c);
	c.tag = 0; /* well formed from here: util_commit.c judges */
	c.u.rma.rma[0].addr = ~0ULL - 4; /* wraps; and not persistent */
	post_raw(&c);
	c.u.rma.rma_count = 2;
	c.u.rma.rma[0].addr = ctl->mr_addr;
	c.u.rma.rma[1] = c.u.rma.rma[0];
	c.u.rma.rma[1].len = ~0ULL - 100; /* the lengths overflow a sum */
	post_raw(&c);
	/* A streamed message cannot ask for commit complete. */
	base_msg(&c, SHM_PROTO_SAR, 64);
	c.flags = SHM_CMD_COMMIT;
	post_raw(&c);
}

static void case_rma_sizes(void)
{
	struct shm_cmd c;

	base_rma(&c, SHM_OP_WRITE, SHM_PROTO_INLINE, ctl->mr_addr, 8,
		 ctl->mr_key);
	c.size = SHM_RMA_INLINE_MAX + 8; /* more inline than fits */
	c.tag = c.u.rma.rma[0].len = c.size;
	post_raw(&c);
	base_rma(&c, SHM_OP_WRITE, SHM_PROTO_INLINE, ctl->mr_addr, 8,
		 ctl->mr_key);
	c.tag = 16; /* iovs do not add up */
	post_raw(&c);
	c.tag = 8;
	c.u.rma.rma_count = 2; /* lengths that overflow */
	c.u.rma.rma[0].len = ~0ULL;
	c.u.rma.rma[1] = c.u.rma.rma[0];
	c.u.rma.rma[1].len = 9;
	post_raw(&c);
	base_rma(&c, SHM_OP_WRITE, SHM_PROTO_INLINE, ctl->mr_addr, 8,
		 ctl->mr_key);
	c.u.rma.offset = 9; /* a chunk outside the operation */
	post_raw(&c);
	c.u.rma.offset = ~0ULL - 3;
	post_raw(&c);
}

static void case_rma_inject_index(void)
{
	struct shm_cmd c;

	base_rma(&c, SHM_OP_WRITE, SHM_PROTO_INJECT, ctl->mr_addr, 64,
		 ctl->mr_key);
	c.u.rma.buf = SHM_INJECT_BUFS;
	post_raw(&c);
	c.u.rma.buf = 0xffffffff;
	post_raw(&c);
	c.u.rma.buf = att_inject(5);
	c.size = c.tag = c.u.rma.rma[0].len = SHM_INJECT_SIZE + 64;
	post_raw(&c);
}

/* Fills @n segments of our channel @ch for the streamed write @id. */
static void att_stream(uint32_t ch, uint64_t id, uint32_t n, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		memset(amap->sar[ch][i].data, 0xee, SHM_SAR_SEG_SIZE);
		amap->sar[ch][i].msg_id = id;
		amap->sar[ch][i].off = i * (uint64_t)SHM_SAR_SEG_SIZE;
		amap->sar[ch][i].len = len;
		amap->sar[ch][i].err = 0;
		atomic_store(&amap->sar[ch][i].full, 1);
	}
	atomic_store(&vmap->peers[att_id].sar_chan, ch + 1);
}

/* Waits (bounded) for the victim to empty channel @ch, then resets it. */
static void att_stream_end(uint32_t ch)
{
	uint32_t i, t;

	for (t = 0; t < 200; t++) {
		for (i = 0; i < SHM_SAR_CHAN_SEGS; i++)
			if (atomic_load(&amap->sar[ch][i].full))
				break;
		if (i == SHM_SAR_CHAN_SEGS)
			break;
		usleep(1000);
	}
	for (i = 0; i < SHM_SAR_CHAN_SEGS; i++)
		atomic_store(&amap->sar[ch][i].full, 0);
	atomic_store(&vmap->peers[att_id].sar_chan, 0);
}

/*
 * Streamed writes (SHM_PROTO_SAR): denied ones (bad key, past the end,
 * read-only memory) are drained into nothing; a valid one whose segment
 * lies about its length writes nothing either.
 */
static void case_rma_sar_write_denied(void)
{
	static const uint32_t segs = 3;
	uint64_t len = segs * (uint64_t)SHM_SAR_SEG_SIZE;
	struct shm_cmd c;

	base_rma(&c, SHM_OP_WRITE, SHM_PROTO_SAR, ctl->mr_addr, len,
		 ctl->mr_key + 1000);
	c.msg_id = 0x5a01;
	att_stream(2, c.msg_id, segs, SHM_SAR_SEG_SIZE);
	post_raw(&c);
	att_stream_end(2);
	base_rma(&c, SHM_OP_WRITE, SHM_PROTO_SAR, ctl->mr_addr + MR_LEN - 8,
		 len, ctl->mr_key);
	c.msg_id = 0x5a02;
	att_stream(2, c.msg_id, segs, SHM_SAR_SEG_SIZE);
	post_raw(&c);
	att_stream_end(2);
	base_rma(&c, SHM_OP_WRITE, SHM_PROTO_SAR, ctl->ro_addr, 64,
		 ctl->ro_key);
	c.msg_id = 0x5a03;
	att_stream(2, c.msg_id, 1, 64);
	post_raw(&c);
	att_stream_end(2);
	base_rma(&c, SHM_OP_WRITE, SHM_PROTO_SAR, ctl->mr_addr, 64,
		 ctl->mr_key);
	c.msg_id = 0x5a04;
	att_stream(2, c.msg_id, 1, 0xffffffffu);
	post_raw(&c);
	att_stream_end(2);
}

/* A streamed write that is valid lands, and only where it says. */
static void case_rma_sar_write_valid(void)
{
	static const uint8_t v[8] = {9, 8, 7, 6, 5, 4, 3, 2};
	struct shm_cmd c;

	base_rma(&c, SHM_OP_WRITE, SHM_PROTO_SAR, ctl->mr_addr, 8, ctl->mr_key);
	c.msg_id = 0x5a05;
	att_stream(3, c.msg_id, 1, 8);
	memcpy(amap->sar[3][0].data, v, 8);
	memcpy(ctl->mr_bytes, v, 8);
	ctl->mr_expect = 1;
	post_raw(&c);
	att_stream_end(3);
}

/*
 * Streamed reads name a channel of ours to write into: out of range, not
 * whole, with a bad key or of write-only... every one refused; a valid
 * one only writes our channel.
 */
static void case_rma_sar_read(void)
{
	struct shm_cmd c;

	base_rma(&c, SHM_OP_READ, SHM_PROTO_SAR, ctl->mr_addr, 64, ctl->mr_key);
	c.u.rma.buf = SHM_SAR_CHANS + 3;
	post_raw(&c);
	c.u.rma.buf = ~0U;
	post_raw(&c);
	c.u.rma.buf = 4;
	c.u.rma.offset = 8; /* not the whole read */
	c.size = 56;
	c.flags = 0;
	post_raw(&c);
	base_rma(&c, SHM_OP_READ, SHM_PROTO_SAR, ctl->mr_addr, 64,
		 ctl->mr_key + 77);
	c.u.rma.buf = 4;
	post_raw(&c);
	base_rma(&c, SHM_OP_READ, SHM_PROTO_SAR, ctl->mr_addr - 64, 128,
		 ctl->mr_key);
	c.u.rma.buf = 4;
	post_raw(&c);
	base_rma(&c, SHM_OP_READ, SHM_PROTO_SAR, ctl->mr_addr, 64, ctl->mr_key);
	c.u.rma.buf = 4;
	post_raw(&c);
	usleep(20000);
	for (uint32_t i = 0; i < SHM_SAR_CHAN_SEGS; i++)
		atomic_store(&amap->sar[4][i].full, 0);
}

static void case_rma_bad_key(void)
{
	struct shm_cmd c;

	base_rma(&c, SHM_OP_WRITE, SHM_PROTO_INJECT, ctl->mr_addr, 64,
		 ctl->mr_key + 1000);
	c.u.rma.buf = att_inject(6);
	post_raw(&c);
	c.u.rma.rma[0].key = ~0ULL;
	post_raw(&c);
}

static void case_rma_ranges(void)
{
	struct shm_cmd c;

	/* Below the start, into the guard. */
	base_rma(&c, SHM_OP_WRITE, SHM_PROTO_INJECT, ctl->mr_addr - 64, 128,
		 ctl->mr_key);
	c.u.rma.buf = att_inject(7);
	post_raw(&c);
	/* Wrapping the address space. */
	base_rma(&c, SHM_OP_WRITE, SHM_PROTO_INJECT, ~0ULL - 16, 64,
		 ctl->mr_key);
	c.u.rma.buf = att_inject(8);
	post_raw(&c);
	/* Write to read-only memory. */
	base_rma(&c, SHM_OP_WRITE, SHM_PROTO_INJECT, ctl->ro_addr, 64,
		 ctl->ro_key);
	c.u.rma.buf = att_inject(9);
	post_raw(&c);
}

/*
 * A chunked write whose operation runs past the registration: the first
 * chunk lies inside, but no byte of it may land.
 */
static void case_rma_chunk_past_end(void)
{
	struct shm_cmd c;

	base_rma(&c, SHM_OP_WRITE, SHM_PROTO_INJECT, ctl->mr_addr, 4096,
		 ctl->mr_key);
	c.tag = c.u.rma.rma[0].len = MR_LEN + 4096;
	c.flags = SHM_CMD_RMA_MORE;
	c.u.rma.buf = att_inject(10);
	post_raw(&c);
	/* Two iovs, the second one bad. */
	base_rma(&c, SHM_OP_WRITE, SHM_PROTO_INJECT, ctl->mr_addr, 4096,
		 ctl->mr_key);
	c.tag = 8192;
	c.flags = SHM_CMD_RMA_MORE;
	c.u.rma.rma_count = 2;
	c.u.rma.rma[1] = c.u.rma.rma[0];
	c.u.rma.rma[1].key = ctl->mr_key + 77;
	c.u.rma.buf = att_inject(11);
	post_raw(&c);
}

static void case_atomic_bad(void)
{
	struct shm_cmd c;

	base_rma(&c, SHM_OP_ATOMIC, SHM_PROTO_INJECT, ctl->mr_addr, 8,
		 ctl->mr_key);
	c.u.rma.buf = att_inject(12);
	c.u.rma.datatype = 200;
	c.u.rma.atomic_op = FI_SUM;
	post_raw(&c);
	c.u.rma.datatype = FI_INT64;
	c.u.rma.atomic_op = 200;
	post_raw(&c);
	c.u.rma.atomic_op = FI_CSWAP; /* compare op on a plain atomic */
	post_raw(&c);
	c.u.rma.atomic_op = FI_SUM;
	c.proto = SHM_PROTO_INLINE; /* atomics come in inject buffers */
	post_raw(&c);
	c.proto = SHM_PROTO_INJECT;
	c.size = c.tag = c.u.rma.rma[0].len = 3; /* not whole elements */
	c.u.rma.datatype = FI_INT32;
	post_raw(&c);
	c.size = c.tag = c.u.rma.rma[0].len = 64;
	c.u.rma.rma[0].addr = ctl->mr_addr + MR_LEN - 32; /* past the end */
	c.u.rma.datatype = FI_INT64;
	post_raw(&c);
	c.op = SHM_OP_COMPARE_ATOMIC;
	c.u.rma.atomic_op = FI_CSWAP;
	c.size = c.tag = c.u.rma.rma[0].len = SHM_INJECT_SIZE; /* > half */
	c.u.rma.rma[0].addr = ctl->mr_addr;
	post_raw(&c);
}

static void case_rma_read_ro_ok_write_denied(void)
{
	struct shm_cmd c;

	/* A fetch-add on read-only memory needs write access too. */
	base_rma(&c, SHM_OP_FETCH_ATOMIC, SHM_PROTO_INJECT, ctl->ro_addr, 8,
		 ctl->ro_key);
	c.u.rma.buf = att_inject(13);
	c.u.rma.datatype = FI_UINT64;
	c.u.rma.atomic_op = FI_SUM;
	post_raw(&c);
}

/*
 * The attacker's own response ring looks full for good: acks to it must
 * not hold the victim's progress for long (deadline: the check below).
 */
static void case_resp_ring_full(void)
{
	struct shm_cmd c;
	int i;

	atomic_fetch_add(&amap->resp_ctl.tail, 3 * SHM_RESP_SLOTS);
	for (i = 0; i < 8; i++) {
		base_rma(&c, SHM_OP_WRITE, SHM_PROTO_INLINE, ctl->mr_addr, 8,
			 ctl->mr_key + 1000);
		post_raw(&c);
	}
}

/* ------------------------------------------------------------------ */
/* The driver.                                                         */

struct hcase {
	const char *name;
	void (*fn)(void);
	bool legit_after; /* a legitimate message must still arrive */
};

static const struct hcase cases[] = {
	{"hdr_garbage", case_hdr_garbage, true},
	{"ring_ctl_garbage", case_ring_ctl_garbage, true},
	{"ring_head_published", case_ring_head_published, true},
	{"ring_tail_wrap", case_ring_tail_wrap, true},
	{"ring_seq_garbage", case_ring_seq_garbage, false},
	{"inject_busy", case_inject_busy, true},
	{"slot_name_unterminated", case_slot_name_unterminated, true},
	{"slot_name_victim", case_slot_name_victim, true},
	{"slot_state_garbage", case_slot_state_garbage, true},
	{"slot_closed_linger", case_slot_closed_linger, false},
	{"own_hdr_corrupt", case_own_hdr_corrupt, true},
	{"own_pid_lie", case_own_pid_lie, true},
	{"msg_bad_op", case_msg_bad_op, true},
	{"msg_bad_proto", case_msg_bad_proto, true},
	{"msg_inline_huge", case_msg_inline_huge, true},
	{"msg_inject_bad", case_msg_inject_bad, true},
	{"msg_cma_bad", case_msg_cma_bad, true},
	{"msg_bad_src", case_msg_bad_src, true},
	{"sar_unexp_huge", case_sar_unexp_huge, false},
	{"sar_bad_seg", case_sar_bad_seg, false},
	{"sar_chan_garbage", case_sar_chan_garbage, true},
	{"own_rx_closed_forged", case_own_rx_closed_forged, true},
	{"ipc_garbage", case_ipc_garbage, true},
	{"rma_valid_control", case_rma_valid_control, true},
	{"rma_bad_op_proto", case_rma_bad_op_proto, true},
	{"rma_no_ack_valid", case_rma_no_ack_valid, true},
	{"rma_no_ack_bad", case_rma_no_ack_bad, true},
	{"rma_counts", case_rma_counts, true},
	{"rma_sizes", case_rma_sizes, true},
	{"commit_garbage", case_commit_garbage, true},
	{"rma_inject_index", case_rma_inject_index, true},
	{"rma_bad_key", case_rma_bad_key, true},
	{"rma_sar_write_denied", case_rma_sar_write_denied, true},
	{"rma_sar_write_valid", case_rma_sar_write_valid, true},
	{"rma_sar_read", case_rma_sar_read, true},
	{"rma_ranges", case_rma_ranges, true},
	{"rma_chunk_past_end", case_rma_chunk_past_end, true},
	{"atomic_bad", case_atomic_bad, true},
	{"atomic_ro_fetch", case_rma_read_ro_ok_write_denied, true},
	{"resp_ring_full", case_resp_ring_full, true},
};

static int attacker_setup(void)
{
	char aname[SHM_NAME_MAX];
	size_t len = sizeof(aname);
	uint32_t i;

	if (node_open(&att) || fi_getname(&att.ep->fid, aname, &len) ||
	    fi_av_insert(att.av, ctl->vname, 1, &vaddr, 0, NULL) != 1)
		return -1;
	memcpy(ctl->aname, aname, sizeof(aname));
	if (!legit_send())
		return -2;
	vmap = map_region(ctl->vname);
	amap = map_region(aname);
	if (!vmap || !amap)
		return -3;
	vr.map = vmap;
	shm_region_handles(&vr);
	for (i = 0; i < SHM_MAX_PEERS; i++) {
		if (atomic_load(&vmap->peers[i].state) == SHM_PEER_READY &&
		    !strncmp(vmap->peers[i].name, aname, SHM_NAME_MAX))
			break;
	}
	if (i == SHM_MAX_PEERS)
		return -4;
	att_id = (uint16_t)i;
	return 0;
}

static void attacker_teardown(void)
{
	if (vmap)
		munmap(vmap, SHM_REGION_SIZE);
	if (amap)
		munmap(amap, SHM_REGION_SIZE);
	vmap = amap = NULL;
	node_close(&att);
	memset(&att, 0, sizeof(att));
}

/* Waits for @pid until @deadline; its status, or -1 (killed: a hang). */
static int reap(pid_t pid, double deadline)
{
	int st;

	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (now() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		usleep(2000);
	}
	return st;
}

/* 0 survived, else a reason in ctl->why. */
static int run_case(const struct hcase *hc)
{
	bool reaped = false;
	double end;
	pid_t pid;
	int ret = 0, st = 0;

	memset(ctl, 0, sizeof(*ctl));
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid)
		_exit(victim());
	end = now() + 10;
	while (!__atomic_load_n(&ctl->ready, __ATOMIC_ACQUIRE) && now() < end)
		usleep(1000);
	if (!ctl->ready || attacker_setup()) {
		snprintf(ctl->why, sizeof(ctl->why), "setup failed");
		ret = 1;
		goto out;
	}
	hc->fn();
	if (hc->legit_after && !legit_send()) {
		snprintf(ctl->why, sizeof(ctl->why),
			 "legitimate message lost afterwards");
		ret = 1;
	}
	ctl->req = 1;
	end = now() + 8;
	while (__atomic_load_n(&ctl->done, __ATOMIC_ACQUIRE) != 1 &&
	       now() < end && !reaped) {
		reaped = waitpid(pid, &st, WNOHANG) == pid;
		fi_cq_read(att.cq, NULL, 0);
	}
	if (ctl->done != 1) {
		if (!ctl->why[0])
			snprintf(ctl->why, sizeof(ctl->why),
				 "victim did not answer (hung or died)");
		ret = 1;
	} else if (ctl->result) {
		ret = 1;
	}
out:
	ctl->stop = 1;
	if (!reaped)
		st = reap(pid, now() + 10);
	if (st == -1) {
		snprintf(ctl->why, sizeof(ctl->why), "victim hung");
		ret = 1;
	} else if (WIFSIGNALED(st)) {
		snprintf(ctl->why, sizeof(ctl->why), "victim died of signal %d",
			 WTERMSIG(st));
		ret = 1;
	} else if (WEXITSTATUS(st) && ctl->done != 1) {
		snprintf(ctl->why, sizeof(ctl->why),
			 "victim died (exit %d) before its check",
			 WEXITSTATUS(st));
		ret = 1;
	} else if (WEXITSTATUS(st)) {
		if (!ctl->why[0])
			snprintf(ctl->why, sizeof(ctl->why),
				 "victim exited with %d", WEXITSTATUS(st));
		ret = 1;
	}
	attacker_teardown();
	return ret;
}

static bool listed(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p = list;

	while (p && (p = strstr(p, name))) {
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return true;
		p += n;
	}
	return false;
}

int main(void)
{
	const char *xfail = getenv("SHM_HOSTILE_XFAIL");
	const char *only = getenv("SHM_HOSTILE_ONLY");
	int fails = 0, xfails = 0, xpass = 0, ran = 0, ret;
	bool xf;
	size_t i;

	setvbuf(stdout, NULL, _IONBF, 0);
	signal(SIGPIPE, SIG_IGN);
	ctl = mmap(NULL, sizeof(*ctl), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ctl == MAP_FAILED)
		return 1;
	alarm(300);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (only && strcmp(only, cases[i].name))
			continue;
		ran++;
		xf = listed(xfail, cases[i].name);
		ret = run_case(&cases[i]);
		if (!ret) {
			printf("%s %s\n", xf ? "XPASS" : "ok   ",
			       cases[i].name);
			xpass += xf;
		} else if (xf) {
			printf("XFAIL %s: %s\n", cases[i].name, ctl->why);
			xfails++;
		} else {
			printf("FAIL  %s: %s\n", cases[i].name, ctl->why);
			fails++;
		}
	}
	printf("%d cases, %d failed, %d expected failures, %d unexpected "
	       "passes\n",
	       ran, fails, xfails, xpass);
	return fails || !ran ? 1 : 0;
}
