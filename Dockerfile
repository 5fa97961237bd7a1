# The tailgate image: `tailgate route`, `bench`, `validate`, `merge` for deploy/k8s/.
# Conventional two-stage Node 20 build (no container engine was available to build it here).
#   docker build -t tailgate:0.1.0 .
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Scripts off: `prepare` builds, and the sources are not copied yet.
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
USER node
EXPOSE 8000
ENTRYPOINT ["node", "/app/dist/cli/main.js"]
CMD ["--help"]
