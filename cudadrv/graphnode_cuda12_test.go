//go:build cuda12

package cudadrv

// graphAddNode adds a node of params to g with no dependencies.
func graphAddNode(node *GraphNode, g Graph, params *GraphNodeParams) error {
	return GraphAddNode(node, g, nil, 0, params)
}
