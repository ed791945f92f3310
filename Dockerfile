# One image for the three processes of the production shape (api, media, worker); the command picks the role.
FROM node:24-bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends espeak-ng pocketsphinx pocketsphinx-en-us sox python3 python3-venv ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && python3 -m venv /opt/stt-venv && /opt/stt-venv/bin/pip install --no-cache-dir pocketsphinx==5.1.1
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
COPY patches ./patches
RUN npm ci --no-audit --no-fund && npm cache clean --force
COPY . .
ENV NODE_ENV=production PORT=8080 LOCAL_STT_PYTHON=/opt/stt-venv/bin/python
EXPOSE 8080
# Overridden per service in docker-compose.yml: api/main.ts, media/main.ts or activities/worker.ts.
CMD ["node", "--import", "tsx", "api/main.ts"]
