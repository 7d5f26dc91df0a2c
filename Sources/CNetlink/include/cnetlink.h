#ifndef CNETLINK_H
#define CNETLINK_H

/// rtnetlink for reachability: a socket that hears about link, address and route changes,
/// and the kernel's route lookup for one address. Written in C because the netlink message
/// macros (NLMSG_*, RTA_*) do not import into Swift.

/// Opens a netlink route socket subscribed to link, IPv4/IPv6 address and IPv4/IPv6 route
/// changes; non-blocking and close-on-exec. Returns the descriptor, or -1 (errno set).
int cnetlink_open_monitor(void);

/// A new epoll set (close-on-exec) holding `fd` for reading, level-triggered: its descriptor
/// is readable while `fd` is. Returns the epoll descriptor, or -1 (errno set).
int cnetlink_epoll_for(int fd);

/// Reads every message waiting on a monitor socket without blocking. Returns how many were
/// read (0 when none), or -1 on an error other than "nothing left" (errno set). A reader that
/// fell behind (ENOBUFS) counts as one message: the state must be looked at again anyway.
int cnetlink_drain(int fd);

/// Asks the kernel which interface it would send a packet to `address` through (an
/// RTM_GETROUTE lookup: nothing is sent on the network). `family` is AF_INET (4 bytes) or
/// AF_INET6 (16 bytes). Returns the interface index (> 0); 0 when there is no usable route
/// (unreachable, blackhole or prohibited); -1 on error (errno set).
int cnetlink_route_interface(int family, const void *address);

#endif
