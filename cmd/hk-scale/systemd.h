/*
 * systemd.h - what the systemd backend's files share:
 * backend_systemd.c (an instance is a transient unit), systemd_bus.c
 * (the connection to systemd over sd-bus, whose state is that file's)
 * and systemd_listen.c (the listening socket a unit is handed).
 * Nothing else in hk-scale includes it.
 */
#ifndef HK_SYSTEMD_H
#define HK_SYSTEMD_H

#include <stddef.h>

#include <systemd/sd-bus.h>

#include "scale.h"

#define SD_DEST		"org.freedesktop.systemd1"
#define SD_PATH		"/org/freedesktop/systemd1"
#define SD_MANAGER	"org.freedesktop.systemd1.Manager"
#define SD_RETRY_MS	1000	/* a lost connection, made again */

/* systemd_bus.c: the connection */
int		 sdbus_ensure(struct scale *, char *, size_t);
sd_bus		*sdbus_bus(void);
void		 sdbus_arm(void);
int		 sdbus_call(sd_bus_slot **, sd_bus_message_handler_t, void *,
		    const char *, const char *, const char *, const char *,
		    ...);
const char	*sdbus_why(const sd_bus_error *, int);
int		 sdbus_append_literal(sd_bus_message *, const char *);

/* systemd_listen.c: a unit's listening socket */
struct store_instance;
int		 sdlisten_take(struct inst *, const struct service_spec *,
		    int *, int *, char *, size_t);
void		 sdlisten_done(int, int);
void		 sdlisten_drop(const struct inst *, int);
int		 sdlisten_prop(sd_bus_message *, int);
int		 sdlisten_exec(sd_bus_message *, const char *, char **);
int		 sdlisten_adopt(struct inst *, const struct store_instance *);

/* backend_systemd.c: what the connection's life means for instances */
void		 systemd_connected(void);	/* sweep */
void		 systemd_dropped(void);	/* going: slots go */
void		 systemd_lost(void);	/* gone: unanswered freezes fail */
void		 systemd_again(void);	/* back: every instance looked at */

#endif
