"""A tus 1.0 server nobody here wrote: tuspyserver's FastAPI router under uvicorn, for the
interop tests.

The router is mounted at /files: OPTIONS /files/ discovers, POST /files/ creates (with
creation-with-upload), HEAD/PATCH/DELETE /files/<id>. Each upload's bytes are stored in
FILES_DIR/<id> (its info in FILES_DIR/<id>.info), where the tests compare them with the file
sent. Uploads expire after a day (Upload-Expires).

Usage: python3 tus_server.py PORT FILES_DIR
"""
import sys

import uvicorn
from fastapi import FastAPI
from tuspyserver import create_tus_router

port = int(sys.argv[1])
files_dir = sys.argv[2]

app = FastAPI()
app.include_router(create_tus_router(prefix="files", files_dir=files_dir, max_size=1 << 30, days_to_keep=1))

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
