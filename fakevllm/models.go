package fakevllm

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// Bounds of the model lists in Options.
const (
	MaxServedModels = 16
	MaxExtraModels  = 16
	MaxLoRAAdapters = 64
	maxModelNameLen = 256
)

// LoRARoot is the prefix of the root /v1/models reports for a LoRA adapter:
// vLLM reports the adapter's path (--lora-modules NAME=PATH), and the fake
// has none, so it reports LoRARoot+NAME.
const LoRARoot = "/adapters/"

// modelKind says what a name that /v1/models lists stands for.
type modelKind uint8

const (
	kindUnknown modelKind = iota
	kindServed            // a served name of the base model
	kindExtra             // an unrelated base model listed beside it
	kindLoRA              // a LoRA adapter on the first served name
)

// validateModelNames checks the three name lists of Options together: each
// name well formed, none twice across the lists, each list within its bound.
func validateModelNames(o Options) error {
	if len(o.Models) == 0 || len(o.Models) > MaxServedModels {
		return fmt.Errorf("%w: need 1 to %d served model names", ErrInvalidOptions, MaxServedModels)
	}
	if len(o.ExtraModels) > MaxExtraModels {
		return fmt.Errorf("%w: at most %d extra models", ErrInvalidOptions, MaxExtraModels)
	}
	if len(o.LoRA) > MaxLoRAAdapters {
		return fmt.Errorf("%w: at most %d LoRA adapters", ErrInvalidOptions, MaxLoRAAdapters)
	}
	seen := make(map[string]string, len(o.Models)+len(o.ExtraModels)+len(o.LoRA))
	for _, list := range []struct {
		kind  string
		names []string
	}{{"served model name", o.Models}, {"extra model name", o.ExtraModels}, {"LoRA adapter name", o.LoRA}} {
		for _, m := range list.names {
			if m == "" || len(m) > maxModelNameLen || strings.ContainsFunc(m, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
				return fmt.Errorf("%w: %s %q must be 1-%d printable characters without spaces", ErrInvalidOptions, list.kind, truncateString(m, 40), maxModelNameLen)
			}
			if prev, dup := seen[m]; dup {
				return fmt.Errorf("%w: %s %q appears twice (already among the %ss)", ErrInvalidOptions, list.kind, m, prev)
			}
			seen[m] = list.kind
		}
	}
	return nil
}

// modelKind classifies a requested model name.
func (s *Server) modelKind(name string) modelKind {
	for _, l := range []struct {
		kind  modelKind
		names []string
	}{{kindServed, s.opts.Models}, {kindExtra, s.opts.ExtraModels}, {kindLoRA, s.opts.LoRA}} {
		for _, m := range l.names {
			if m == name {
				return l.kind
			}
		}
	}
	return kindUnknown
}

// checkModel refuses a model name the member does not list; "" (absent)
// means the default served name, as in vLLM.
func (s *Server) checkModel(name string) *apiError {
	if name == "" || s.modelKind(name) != kindUnknown {
		return nil
	}
	return &apiError{Status: http.StatusNotFound, Param: "model",
		Message: "The model `" + truncateString(name, 256) + "` does not exist."}
}

// replyModel is the model name a response reports: vLLM reports the first
// served name for the base model (whichever served name was asked for) and
// the adapter's own name for a LoRA request. An extra model reports its own
// name, as the server that really hosts it would.
func (s *Server) replyModel(requested string) string {
	if k := s.modelKind(requested); k == kindLoRA || k == kindExtra {
		return requested
	}
	return s.opts.Models[0]
}

type modelList struct {
	Object string      `json:"object"`
	Data   []modelCard `json:"data"`
}

// modelCard is vLLM's ModelCard, every field serialized (vLLM answers with
// model_dump(), so unset optionals appear as null).
type modelCard struct {
	ID          string            `json:"id"`
	Object      string            `json:"object"`
	Created     int64             `json:"created"`
	OwnedBy     string            `json:"owned_by"`
	Root        string            `json:"root"`
	Parent      *string           `json:"parent"`
	MaxModelLen *int              `json:"max_model_len"`
	Permission  []modelPermission `json:"permission"`
}

type modelPermission struct {
	ID                 string  `json:"id"`
	Object             string  `json:"object"`
	Created            int64   `json:"created"`
	AllowCreateEngine  bool    `json:"allow_create_engine"`
	AllowSampling      bool    `json:"allow_sampling"`
	AllowLogprobs      bool    `json:"allow_logprobs"`
	AllowSearchIndices bool    `json:"allow_search_indices"`
	AllowView          bool    `json:"allow_view"`
	AllowFineTuning    bool    `json:"allow_fine_tuning"`
	Organization       string  `json:"organization"`
	Group              *string `json:"group"`
	IsBlocking         bool    `json:"is_blocking"`
}

// listModels answers GET /v1/models in vLLM's shape (OpenAIServingModels.
// show_available_models): the base models first, each served name with the
// model's root, no parent and max_model_len; then every LoRA adapter with its
// path as root, the first served name as parent and no max_model_len. Extra
// models are base entries whose root is their own name. A member that is not
// ready lists nothing.
func (s *Server) listModels(c *gin.Context) {
	list := modelList{Object: "list", Data: []modelCard{}}
	if s.ready() {
		list.Data = s.modelCards()
	}
	c.JSON(http.StatusOK, list)
}

func (s *Server) modelCards() []modelCard {
	created := s.started.Unix()
	maxLen := s.lim.maxModelLen
	cards := make([]modelCard, 0, len(s.opts.Models)+len(s.opts.ExtraModels)+len(s.opts.LoRA))
	card := func(id, root string, parent *string, maxModelLen *int) {
		cards = append(cards, modelCard{
			ID: id, Object: "model", Created: created, OwnedBy: "vllm", Root: root, Parent: parent, MaxModelLen: maxModelLen,
			Permission: []modelPermission{{
				ID: fmt.Sprintf("modelperm-%016x", deriveSeed(s.opts.Seed, uint64(100+len(cards)))), Object: "model_permission",
				Created: created, AllowSampling: true, AllowLogprobs: true, AllowView: true, Organization: "*",
			}},
		})
	}
	for _, m := range s.opts.Models {
		card(m, s.opts.Models[0], nil, &maxLen)
	}
	for _, m := range s.opts.ExtraModels {
		card(m, m, nil, &maxLen)
	}
	parent := s.opts.Models[0]
	for _, m := range s.opts.LoRA {
		card(m, LoRARoot+m, &parent, nil)
	}
	return cards
}
