/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A device by its name, for every test program: its context, its RoCE v2
 * IPv4 GID, its port counters.
 */
#ifndef VRDMA_GID_LIB_H
#define VRDMA_GID_LIB_H

#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>

/*
 * The index of @dev's RoCE v2 GID that starts with @prefix (sysfs notation,
 * "fd00:0219:..."), or -1.
 */
static inline int rc_find_gid_prefix(const char *dev, const char *prefix)
{
	char path[256], gid[64], type[32];
	int i, found = -1;
	FILE *f;

	for (i = 0; i < 4096 && found < 0; i++) {
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/%s/ports/1/gids/%d", dev, i);
		f = fopen(path, "r");
		if (!f)
			break;
		if (!fgets(gid, sizeof(gid), f))
			gid[0] = 0;
		fclose(f);
		if (strncmp(gid, prefix, strlen(prefix)))
			continue;
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/%s/ports/1/gid_attrs/types/%d",
			 dev, i);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(type, sizeof(type), f) &&
		    !strncmp(type, "RoCE v2", 7))
			found = i;
		fclose(f);
	}
	return found;
}

/* The index of @dev's RoCE v2 GID with an IPv4 address, or -1. */
static inline int rc_find_gid(const char *dev)
{
	return rc_find_gid_prefix(dev, "0000:0000:0000:0000:0000:ffff:");
}

/* Open the RDMA device @name, or NULL. */
static inline struct ibv_context *rc_open_by_name(const char *name)
{
	struct ibv_device **list, **d;
	struct ibv_context *ctx = NULL;

	list = ibv_get_device_list(NULL);
	if (!list)
		return NULL;
	for (d = list; *d; d++)
		if (!strcmp(ibv_get_device_name(*d), name))
			ctx = ibv_open_device(*d);
	ibv_free_device_list(list);
	return ctx;
}

/* The port counter @name of port 1 of @dev (sysfs hw_counters), or -1. */
static inline long long rc_hw_counter(const char *dev, const char *name)
{
	char path[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/%s", dev, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

#endif
