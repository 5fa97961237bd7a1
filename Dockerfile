# The tailgate image: `tailgate route`, `bench`, `validate`, `merge` for deploy/k8s/.
# Two stages: the build stage compiles TypeScript; the runtime stage holds only production
# dependencies and dist/, and runs as the unprivileged `node` user (uid 1000, as the manifests expect).
#   docker build -t REGISTRY/tailgate:0.1.0 .
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Scripts off: `prepare` builds, and the sources are not copied yet.
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist ./dist
USER 1000:1000
EXPOSE 8000
# For `docker run ... route`: the router's /live depends on its process alone, whatever the workers
# do (Kubernetes uses the Deployment's probes instead).
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8000/live').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "/app/dist/cli/main.js"]
CMD ["--help"]
