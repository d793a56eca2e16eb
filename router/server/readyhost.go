package server

import "github.com/gin-gonic/gin"

// HostReadyPath answers like /readyz with quiesce set aside: 200 once the first readiness round has
// completed and every replica tier has a probed-ready member (loaded models), unless the decision sink
// is failing. It is the kubelet's readinessProbe in deploy/kubernetes: the pod's Ready condition is
// also what a StatefulSet rolling update waits for and what a PodDisruptionBudget counts, and a host an
// operator quiesced on purpose must neither stall a rollout nor block drains elsewhere. /readyz stays
// traffic readiness, for balancers that health-check it.
const HostReadyPath = "/readyz/host"

func (s *Server) readyzHost(c *gin.Context) { s.readiness(c, true) }
