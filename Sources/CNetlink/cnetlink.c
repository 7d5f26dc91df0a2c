#include "cnetlink.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

int cnetlink_open_monitor(void) {
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0) return -1;
    struct sockaddr_nl local;
    memset(&local, 0, sizeof local);
    local.nl_family = AF_NETLINK;
    local.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE;
    if (bind(fd, (struct sockaddr *)&local, sizeof local) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int cnetlink_epoll_for(int fd) {
    int set = epoll_create1(EPOLL_CLOEXEC);
    if (set < 0) return -1;
    struct epoll_event event;
    memset(&event, 0, sizeof event);
    event.events = EPOLLIN;
    event.data.fd = fd;
    if (epoll_ctl(set, EPOLL_CTL_ADD, fd, &event) != 0) {
        int saved = errno;
        close(set);
        errno = saved;
        return -1;
    }
    return set;
}

int cnetlink_drain(int fd) {
    char buffer[16384];
    int messages = 0;
    for (;;) {
        ssize_t length = recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (length < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return messages;
            if (errno == ENOBUFS) { messages += 1; continue; }
            return -1;
        }
        if (length == 0) return messages;
        for (struct nlmsghdr *header = (struct nlmsghdr *)buffer; NLMSG_OK(header, (size_t)length);
             header = NLMSG_NEXT(header, length)) {
            messages += 1;
        }
    }
}

int cnetlink_route_interface(int family, const void *address) {
    size_t addressLength = family == AF_INET ? 4 : family == AF_INET6 ? 16 : 0;
    if (addressLength == 0) { errno = EAFNOSUPPORT; return -1; }
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0) return -1;

    struct {
        struct nlmsghdr header;
        struct rtmsg route;
        char attributes[64];
    } request;
    memset(&request, 0, sizeof request);
    request.header.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
    request.header.nlmsg_type = RTM_GETROUTE;
    request.header.nlmsg_flags = NLM_F_REQUEST;
    request.header.nlmsg_seq = 1;
    request.route.rtm_family = (unsigned char)family;
    request.route.rtm_dst_len = (unsigned char)(addressLength * 8);
    struct rtattr *destination = (struct rtattr *)((char *)&request + NLMSG_ALIGN(request.header.nlmsg_len));
    destination->rta_type = RTA_DST;
    destination->rta_len = RTA_LENGTH(addressLength);
    memcpy(RTA_DATA(destination), address, addressLength);
    request.header.nlmsg_len = NLMSG_ALIGN(request.header.nlmsg_len) + RTA_ALIGN(destination->rta_len);

    struct sockaddr_nl kernel;
    memset(&kernel, 0, sizeof kernel);
    kernel.nl_family = AF_NETLINK;
    if (sendto(fd, &request, request.header.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    // The kernel answers a route lookup while handling the request, so the reply is waiting
    // by the time sendto returns: never wait for it.
    char buffer[8192];
    ssize_t length;
    do { length = recv(fd, buffer, sizeof buffer, MSG_DONTWAIT); } while (length < 0 && errno == EINTR);
    int saved = errno;
    close(fd);
    if (length < 0) { errno = saved; return -1; }

    for (struct nlmsghdr *header = (struct nlmsghdr *)buffer; NLMSG_OK(header, (size_t)length);
         header = NLMSG_NEXT(header, length)) {
        if (header->nlmsg_type == NLMSG_ERROR) {
            struct nlmsgerr *failure = NLMSG_DATA(header);
            int code = -failure->error;
            if (code == ENETUNREACH || code == EHOSTUNREACH || code == ENETDOWN) return 0;
            errno = code;
            return -1;
        }
        if (header->nlmsg_type != RTM_NEWROUTE) continue;
        struct rtmsg *route = NLMSG_DATA(header);
        if (route->rtm_type == RTN_UNREACHABLE || route->rtm_type == RTN_BLACKHOLE
            || route->rtm_type == RTN_PROHIBIT || route->rtm_type == RTN_THROW) {
            return 0;
        }
        int attributesLength = (int)RTM_PAYLOAD(header);
        for (struct rtattr *attribute = RTM_RTA(route); RTA_OK(attribute, attributesLength);
             attribute = RTA_NEXT(attribute, attributesLength)) {
            if (attribute->rta_type == RTA_OIF) return *(int *)RTA_DATA(attribute);
        }
    }
    return 0;
}
