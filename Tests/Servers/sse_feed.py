"""A Server-Sent Events feed on sse-starlette under uvicorn, for the interop tests.

GET /feed?count=N&per=K sends events with ids 1..N as JSON data
{"id": i, "resumedFrom": <the request's Last-Event-ID or 0>, "text": "event i"}, starting
after the request's Last-Event-ID, and ends each connection cleanly after K events (so the
client must reconnect with Last-Event-ID). Every 4th event's JSON is indented (several data
lines, which the client joins with line feeds), every event is typed "tick", the first event
of a connection carries retry: 10, and a ping comment comes every second. Once the client
names the last event, it answers 204.

Usage: python3 sse_feed.py PORT
"""
import asyncio
import json
import sys

import uvicorn
from sse_starlette.sse import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route


async def feed(request):
    count = int(request.query_params.get("count", "10"))
    per = int(request.query_params.get("per", "1000000"))
    last = int(request.headers.get("last-event-id", "0") or "0")
    if last >= count:
        return Response(status_code=204)

    async def events():
        sent = 0
        for i in range(last + 1, count + 1):
            if sent == per:
                return
            data = json.dumps({"id": i, "resumedFrom": last, "text": f"event {i}"}, indent=1 if i % 4 == 0 else None)
            yield ServerSentEvent(data=data, id=str(i), event="tick", retry=10 if sent == 0 else None)
            sent += 1
            await asyncio.sleep(0)

    return EventSourceResponse(events(), ping=1)


app = Starlette(routes=[Route("/feed", feed)])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
